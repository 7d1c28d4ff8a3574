"""Fuzzing the API of a real server process: every RPC of every served gRPC service and every HTTP route of
the app get generated requests (valid, boundary and mutated bytes); none may be answered UNKNOWN, INTERNAL
or HTTP 500, and the server must stay healthy.

The RPCs come from the services the server registers (admin.grpc_services), the routes from the ASGI app
itself. FLYTELITE_FUZZ_EXAMPLES sets the examples per RPC and per route (default 20: about 4,300 requests);
runs are reproducible (derandomized) unless FLYTELITE_FUZZ_SEED picks a seed. The workflows the fuzzed
requests can run start no task process (tests/fuzz/flows.py), and every execution still running at the end
is terminated.
"""

from __future__ import annotations

import http.client
import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace

import grpc
import pytest
from flyteidl.admin import common_pb2, execution_pb2, project_pb2, signal_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2
from flyteidl.service import admin_pb2_grpc, signal_pb2_grpc
from hypothesis import HealthCheck, Phase, given, seed, settings

from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.config import Config
from flytelite.console.app import build_app
from flytelite.server.app import build_context
from flytelite.testing import make_server
from tests.admin.harness import Admin
from tests.e2e.flyte_cli import wait_for
from tests.fuzz import flows
from tests.fuzz.routes import HttpRequest, app_routes, http_requests
from tests.fuzz.strategies import Pools, mutations, requests

pytestmark = pytest.mark.e2e

EXAMPLES = int(os.environ.get("FLYTELITE_FUZZ_EXAMPLES", "20"))
SEED = os.environ.get("FLYTELITE_FUZZ_SEED")
P, D = "flytesnacks", "development"
TERMINAL = {core_exec.WorkflowExecution.SUCCEEDED, core_exec.WorkflowExecution.FAILED,
            core_exec.WorkflowExecution.ABORTED, core_exec.WorkflowExecution.TIMED_OUT}
FORBIDDEN = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE,
             grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.DATA_LOSS}
ECHO_WF, GATE_WF = "tests.fuzz.flows.fz_echo_wf", "tests.fuzz.flows.fz_gate_wf"


def fuzz_settings(examples: int):
    chosen = settings(max_examples=examples, deadline=None, database=None, derandomize=SEED is None,
                      suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    return (lambda f: seed(int(SEED))(chosen(f))) if SEED is not None else chosen


@dataclass
class Tally:
    """Outcomes by status, and the requests answered with a forbidden one."""

    grpc: Counter = field(default_factory=Counter)
    http: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)  # RPCs and routes with at least one success

    def fail(self, text: str) -> None:
        if len(self.failures) < 200:
            self.failures.append(text)


def pools() -> Pools:
    names = ["fz_echo", ECHO_WF, GATE_WF, "fzecho1", "fzgate1"]
    return Pools({
        "project": [P], "id": [P, "fzecho1"], "domain": [D, "staging", "production"], "name": names,
        "version": ["v1"], "node_id": ["n0", "start-node", "end-node"], "signal_id": ["title"],
        "key": ["name", "created_at", "duration", "phase", "bogus"], "org": [""],
        "filename": ["fast0123.tar.gz"], "filename_root": ["fuzzroot"], "cause": ["fuzzing"],
        "singular": ["workflow", "task", "launch_plan"], "kind": ["workflows", "tasks", "launch_plans", "launchPlans"],
        "path": ["console.css", "console.js", "flytesnacks-development-fzecho1/n0/attempt-0.log"],
        "value": ["5", "hello", "true"], "execution": ["fzgate1"], "execution_name": ["", "fzlaunch1"],
        "phase": ["SUCCEEDED", "RUNNING", "bogus"], "workflow": [ECHO_WF], "from": ["2024-01-01T00:00"],
        "to": ["yesterday"], "follow": ["1"], "offset": ["0", "-1", str(2**64)],
    })


def seed_server(endpoint: str, channel: grpc.Channel) -> None:
    """Register the two workflows and start one execution of each; the echo one succeeds."""
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    admin = Admin(None, stub, endpoint)
    admin.register(flows.fz_echo_wf, "v1")
    admin.register(flows.fz_gate_wf, "v1")
    for name, wf in (("fzecho1", ECHO_WF), ("fzgate1", GATE_WF)):
        stub.CreateExecution(execution_request(name, wf), timeout=60)
    wait_for(lambda: phase_of(stub, "fzecho1") == core_exec.WorkflowExecution.SUCCEEDED, "the echo execution")
    signals = signal_pb2_grpc.SignalServiceStub(channel)
    wait_for(lambda: signals.ListSignals(signal_pb2.SignalListRequest(
        workflow_execution_id=idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="fzgate1"), limit=10),
        timeout=60).signals, "the gate's signal")


def execution_request(name: str, workflow: str) -> execution_pb2.ExecutionCreateRequest:
    lp = idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name=workflow, version="v1")
    inputs = literals_pb2.LiteralMap(literals={"a": literals_pb2.Literal(
        scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=5)))})
    return execution_pb2.ExecutionCreateRequest(project=P, domain=D, name=name,
                                                spec=execution_pb2.ExecutionSpec(launch_plan=lp), inputs=inputs)


def phase_of(stub, name: str, project: str = P, domain: str = D) -> int:
    return stub.GetExecution(execution_pb2.WorkflowExecutionGetRequest(
        id=idpb.WorkflowExecutionIdentifier(project=project, domain=domain, name=name)), timeout=60).closure.phase


def unfinished_executions(stub) -> list[idpb.WorkflowExecutionIdentifier]:
    """Every execution not in a terminal phase, in every project and domain (fuzzing may have made some)."""
    found = []
    projects = stub.ListProjects(project_pb2.ProjectListRequest(limit=10_000), timeout=60).projects
    for project in projects:
        for domain in project.domains:
            token = ""
            while True:
                listed = stub.ListExecutions(common_pb2.ResourceListRequest(
                    id=common_pb2.NamedEntityIdentifier(project=project.id, domain=domain.id), limit=1000,
                    token=token), timeout=60)
                found += [e.id for e in listed.executions if e.closure.phase not in TERMINAL]
                token = listed.token
                if not token:
                    break
    return found


def descendants(pid: int) -> set[int]:
    """Processes under `pid` (task processes, warm workers), from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    srv = make_server(tmp_path_factory.mktemp("fuzz"))
    srv.start()
    try:
        yield srv
    finally:
        if srv.proc is not None:
            srv.stop()


def send_grpc(rpc, data: bytes) -> tuple[grpc.StatusCode, str]:
    try:
        rpc(data, timeout=120)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""


class HttpClient:
    """One keep-alive connection, opened again when the server closes it."""

    def __init__(self, port: int):
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def send(self, req: HttpRequest) -> tuple[int, bytes]:
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                self.conn.request(req.method, req.path, body=req.body, headers=req.headers)
                resp = self.conn.getresponse()
                body = resp.read()
                if resp.getheader("connection", "").lower() == "close":
                    self.close()
                return resp.status, body
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def fuzz_grpc(channel: grpc.Channel, tally: Tally) -> int:
    """Each RPC: EXAMPLES generated requests, each sent as is and with its bytes mutated."""
    the_pools = pools()
    methods = [(service, method) for service in GRPC_SERVICES for method in service.descriptor.methods]
    for service, method in methods:
        path = f"/{service.descriptor.full_name}/{method.name}"
        generated = requests(method.input_type, the_pools).flatmap(
            lambda m: mutations(m.SerializeToString()).map(lambda bad, m=m: (m, bad)))
        fuzz_settings(EXAMPLES)(given(generated)(grpc_case(channel.unary_unary(path), path, tally)))()
    return len(methods)


def grpc_case(rpc, path: str, tally: Tally):
    def case(pair) -> None:
        msg, mutated = pair
        for kind, data in (("generated", msg.SerializeToString()), ("mutated", mutated)):
            code, details = send_grpc(rpc, data)
            tally.grpc[code.name] += 1
            if code == grpc.StatusCode.OK:
                tally.answered.add(path)
            exhausted = code == grpc.StatusCode.RESOURCE_EXHAUSTED and "metadata" in details
            if code in FORBIDDEN or exhausted:
                shown = f"request: {str(msg)[:300]!r}" if kind == "generated" else f"bytes: {data[:80]!r}"
                tally.fail(f"{path} ({kind}, {len(data)} bytes): {code.name}: {details[:300]}\n    {shown}")
    return case


def fuzz_http(port: int, tmp_path, tally: Tally) -> int:
    """Each route and method of the app: EXAMPLES generated requests."""
    ctx = build_context(Config(home=tmp_path / "routes-home"))
    try:
        routes = app_routes(build_app(ctx))
    finally:
        ctx.db.dispose()
    client, the_pools = HttpClient(port), pools()
    try:
        for route in routes:
            for method in route.methods:
                one = replace(route, methods=(method,))
                fuzz_settings(EXAMPLES)(given(http_requests([one], the_pools))(
                    http_case(client, f"{method} {route.path}", tally)))()
    finally:
        client.close()
    return sum(len(r.methods) for r in routes)


def http_case(client: HttpClient, label: str, tally: Tally):
    def case(req: HttpRequest) -> None:
        status, body = client.send(req)
        tally.http[status] += 1
        if status < 300:
            tally.answered.add(label)
        if status >= 500 and status != 501:
            tally.fail(f"{label}: HTTP {status}: {body[:300]!r}\n    request: {req.method} {req.path[:200]} "
                       f"{req.headers} {(req.body or b'')[:200]!r}")
    return case


def test_fuzzed_requests_get_no_internal_error_and_the_server_stays_healthy(fuzz_server, tmp_path):
    channel = grpc.insecure_channel(fuzz_server.endpoint, options=[
        ("grpc.max_receive_message_length", 64 * 1024 * 1024), ("grpc.max_send_message_length", 64 * 1024 * 1024)])
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    try:
        seed_server(fuzz_server.endpoint, channel)
        tally, started = Tally(), time.monotonic()
        n_rpcs = fuzz_grpc(channel, tally)
        n_routes = fuzz_http(fuzz_server.port, tmp_path, tally)

        elapsed = time.monotonic() - started
        print(f"\nfuzz: {sum(tally.grpc.values())} gRPC requests to {n_rpcs} RPCs of {len(GRPC_SERVICES)} services: "
              f"{dict(tally.grpc.most_common())}")
        print(f"fuzz: {sum(tally.http.values())} HTTP requests to {n_routes} routes and methods: "
              f"{dict(sorted(tally.http.items()))}")
        print(f"fuzz: {elapsed:.1f} s, {EXAMPLES} examples per RPC and route; "
              f"{len(tally.answered)} RPCs and routes answered a request with success")
        assert not tally.failures, "requests answered with an internal error:\n" + "\n".join(tally.failures)

        # Healthy: health check, a read, and a new execution that runs to the end.
        client = HttpClient(fuzz_server.port)
        assert client.send(HttpRequest("GET", "/healthz", {}, None))[0] == 200
        client.close()
        assert phase_of(stub, "fzecho1") == core_exec.WorkflowExecution.SUCCEEDED
        stub.CreateExecution(execution_request("fzafter1", ECHO_WF), timeout=60)
        wait_for(lambda: phase_of(stub, "fzafter1") == core_exec.WorkflowExecution.SUCCEEDED,
                 "an execution started after the fuzzing")
    finally:
        stop_everything(stub, fuzz_server)
        channel.close()


def stop_everything(stub, server) -> None:
    """Terminate what the fuzzing left running, stop the server, and check no process of it is left."""
    for ident in unfinished_executions(stub):
        try:
            stub.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=ident, cause="fuzz test over"),
                                    timeout=60)
        except grpc.RpcError as exc:  # finished meanwhile
            assert exc.code() == grpc.StatusCode.FAILED_PRECONDITION, exc.details()
    wait_for(lambda: not unfinished_executions(stub), "every execution to end", timeout=180)
    processes = descendants(server.proc.pid)
    assert server.stop() == 0
    wait_for(lambda: not [pid for pid in processes if alive(pid)], "the server's processes to exit", timeout=60)
