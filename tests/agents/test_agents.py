"""Task types served by flytekit agents, end to end: `pyflyte run --remote` against a real server that starts
`pyflyte serve agent` itself. The agents are flytekit's FileSensor and those of a small plugin package
(test_agents_pkg) installed into a folder on PYTHONPATH, found by flytekit through its `flytekit.plugins`
entry point."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from concurrent import futures
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from flyteidl.admin import agent_pb2, task_execution_pb2
from flyteidl.core import execution_pb2, identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc, agent_pb2_grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.e2e.flyte_cli import remote_for, run_remote, wait_for

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
TaskPhase = execution_pb2.TaskExecution.Phase
CONFIG = "agent_service: {resync_seconds: 0.3}\n"


@pytest.fixture(scope="module")
def agent_env(tmp_path_factory):
    """PYTHONPATH (for the servers and pyflyte started meanwhile) with the test agents installed by pip."""
    work = tmp_path_factory.mktemp("agent-pkg")
    source = shutil.copytree(HERE / "test_agents_pkg", work / "src")  # the build leaves its folders there
    site = work / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, f"pip could not install the test agents:\n{proc.stdout}\n{proc.stderr}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(site)) if p))
        yield


def start_server(folder: Path):
    server = make_server(folder, config=CONFIG)
    server.start()
    return server


def stop_server(server) -> None:
    if server.proc is not None:
        server.stop()
    # The agent servers go with it: none is left running in its home.
    wait_for(lambda: not processes_in(server.home), "the agent servers to stop")


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory, agent_env):
    server = start_server(tmp_path_factory.mktemp("agents"))
    yield server
    stop_server(server)


@pytest.fixture
def workflows(tmp_path) -> Path:
    folder = tmp_path / "wf"
    folder.mkdir()
    shutil.copy(HERE / "workflows" / "agent_workflows.py", folder)
    return folder


def processes_in(home: Path) -> list[int]:
    """Live processes whose working directory is inside `home` (the local agent servers run in work/agents)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(home):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def task_execution(server, name: str, node_id: str = "n0") -> execution_pb2.TaskExecution | None:
    """The latest attempt of a node's task execution, as admin serves it (closure with reason, logs, ...)."""
    with grpc.insecure_channel(server.endpoint) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        node = identifier_pb2.NodeExecutionIdentifier(node_id=node_id, execution_id=identifier_pb2.WorkflowExecutionIdentifier(
            project="flytesnacks", domain="development", name=name))
        found = stub.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(node_execution_id=node, limit=10))
    attempts = sorted(found.task_executions, key=lambda t: t.id.retry_attempt)
    return attempts[-1] if attempts else None


def wait_running(server, name: str, node_id: str = "n0", reason: str = "") -> execution_pb2.TaskExecution:
    def running():
        t = task_execution(server, name, node_id)
        return t if t is not None and t.closure.phase == TaskPhase.RUNNING and reason in t.closure.reason else None
    return wait_for(running, f"task {node_id} of {name} running")


def finished(server, name: str):
    remote = remote_for(server)
    return remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=120),
                       poll_interval=timedelta(seconds=0.3))


def journal_lines(journal: Path) -> list[str]:
    return journal.read_text().splitlines() if journal.exists() else []


def start_waiting(server, workflows: Path, tmp_path: Path, x: int) -> tuple[str, Path, Path, int]:
    """Run wait_wf until its agent task polls: (execution name, marker, journal, pid of the agent server)."""
    marker, journal = tmp_path / "marker", tmp_path / "journal"
    name = run_remote(server, workflows, "agent_workflows.py", "wait_wf", "--marker", str(marker),
                      "--journal", str(journal), "--x", str(x))
    wait_running(server, name, reason="waiting for")
    return name, marker, journal, int(journal_lines(journal)[0].split()[-1])


def finish_waiting(server, name: str, marker: Path, journal: Path, x: int, other_than: int) -> None:
    """Once an agent server other than `other_than` polls, create the marker: the task ends with 2x, created once."""
    wait_for(lambda: any(line.startswith("get ") and int(line.split()[1]) != other_than
                         for line in journal_lines(journal)), "another agent server to be polled")
    marker.touch()
    execution = finished(server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 2 * x
    assert [line.split()[0] for line in journal_lines(journal)].count("create") == 1, journal_lines(journal)


def test_file_sensor_waits_for_the_path(agent_server, workflows, tmp_path):
    path = tmp_path / "arrives-later.txt"
    name = run_remote(agent_server, workflows, "agent_workflows.py", "sensor_wf", "--path", str(path))
    sensor = wait_running(agent_server, name)
    assert sensor.closure.metadata.plugin_identifier == "agent-service"
    assert sensor.closure.task_type == "sensor"
    path.write_text("it came")
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "it came"
    assert task_execution(agent_server, name).closure.phase == TaskPhase.SUCCEEDED


def test_async_agent_polls_until_done_and_reports_what_it_says(agent_server, workflows, tmp_path):
    marker, journal = tmp_path / "marker", tmp_path / "journal"
    name = run_remote(agent_server, workflows, "agent_workflows.py", "wait_wf", "--marker", str(marker),
                      "--journal", str(journal), "--x", "21")
    running = wait_running(agent_server, name, reason="waiting for")
    assert running.closure.reason == f"waiting for {marker}"
    links = {log.name: log.uri for log in running.closure.logs}
    assert links["Test agent job"] == "https://agent.invalid/jobs/marker"
    assert links["Agent server log (flytelite)"].startswith(f"{agent_server.url}/logs/agents/")
    with urllib.request.urlopen(links["Agent server log (flytelite)"], timeout=30) as response:
        assert "flytelite_wait" in response.read().decode()  # its table of the agents it serves
    assert running.closure.custom_info.fields["marker"].string_value == str(marker)
    wait_for(lambda: journal_lines(journal).count(f"get {journal_lines(journal)[0].split()[-1]}") >= 2,
             "GetTask to be called again")
    marker.touch()
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 42
    done = task_execution(agent_server, name)
    assert done.closure.phase == TaskPhase.SUCCEEDED and done.closure.reason == "the marker is there"
    assert [line.split()[0] for line in journal_lines(journal)].count("create") == 1


def test_async_agent_failure_is_the_tasks_error(agent_server, workflows, tmp_path):
    name = run_remote(agent_server, workflows, "agent_workflows.py", "wait_wf", "--marker", str(tmp_path / "m"),
                      "--journal", str(tmp_path / "journal"), "--x", "-1")
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    failed = task_execution(agent_server, name)
    assert failed.closure.phase == TaskPhase.FAILED
    assert failed.closure.error.code == "TaskFailedWithError"
    assert failed.closure.error.message == "failed to run the job: x must not be negative, got -1"


def test_sync_agent_answers_at_once(agent_server, workflows):
    name = run_remote(agent_server, workflows, "agent_workflows.py", "greet_wf", "--name", "flytelite")
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "hello flytelite"
    done = task_execution(agent_server, name)
    assert done.closure.phase == TaskPhase.SUCCEEDED and done.closure.task_type == "flytelite_greet"


def test_terminate_deletes_the_agents_task(agent_server, workflows, tmp_path):
    marker, journal = tmp_path / "never-there", tmp_path / "journal"
    name = run_remote(agent_server, workflows, "agent_workflows.py", "wait_wf", "--marker", str(marker),
                      "--journal", str(journal), "--x", "1")
    wait_running(agent_server, name, reason="waiting for")
    remote = remote_for(agent_server)
    remote.terminate(remote.fetch_execution(name=name), "no longer needed")
    wait_for(lambda: "delete never-there" in journal_lines(journal), "DeleteTask")
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.ABORTED
    assert task_execution(agent_server, name).closure.phase == TaskPhase.ABORTED


def test_timeout_deletes_the_agents_task(agent_server, workflows, tmp_path):
    journal = tmp_path / "journal"
    name = run_remote(agent_server, workflows, "agent_workflows.py", "timeout_wf", "--marker",
                      str(tmp_path / "late"), "--journal", str(journal))
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "timeout" in execution.error.message, execution.error.message
    assert "create n0" in " ".join(journal_lines(journal))
    wait_for(lambda: "delete late" in journal_lines(journal), "DeleteTask")


def test_unserved_task_type_fails_saying_what_serves(agent_server, workflows):
    name = run_remote(agent_server, workflows, "agent_workflows.py", "unserved_wf")
    execution = finished(agent_server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    message = task_execution(agent_server, name).closure.error.message
    assert "no plugin or agent runs tasks of type 'flytelite_nobody'" in message
    assert "flytelite_wait" in message and "sensor" in message


def test_agent_server_that_dies_is_started_again(agent_server, workflows, tmp_path):
    name, marker, journal, agent = start_waiting(agent_server, workflows, tmp_path, 3)
    os.kill(agent, signal.SIGKILL)
    finish_waiting(agent_server, name, marker, journal, 3, other_than=agent)


def test_restart_resumes_polling_without_creating_again(agent_env, workflows, tmp_path):
    server = start_server(tmp_path / "server")
    try:
        name, marker, journal, agent = start_waiting(server, workflows, tmp_path, 5)
        server.stop(sig=signal.SIGKILL)
        # Its agent server goes too, though nobody stopped it.
        wait_for(lambda: not Path(f"/proc/{agent}").exists(), "the killed server's agent server to exit")
        server.start()
        finish_waiting(server, name, marker, journal, 5, other_than=agent)
    finally:
        stop_server(server)


def test_configured_agent_endpoint_runs_its_task_types(agent_env, workflows, tmp_path):
    """agent_for_task_types sends a task type to an agent server flytelite did not start (here one the test
    runs, as a Flyte deployment runs its agent service), and flytelite starts none of its own."""
    from flytelite.testing import free_port

    port = free_port()
    agent_log = open(tmp_path / "agent.log", "wb")
    agent = subprocess.Popen([str(Path(sys.executable).parent / "pyflyte"), "serve", "agent", "--port", str(port),
                              "--prometheus_port", str(free_port())], stdout=agent_log, stderr=subprocess.STDOUT,
                             cwd=tmp_path)
    server = make_server(tmp_path / "server", config=(
        "agent_service:\n  local_agents: false\n  resync_seconds: 0.3\n"
        f"  agents: {{external: {{endpoint: '127.0.0.1:{port}'}}}}\n"
        "  agent_for_task_types: {flytelite_wait: external}\n"))
    try:
        server.start()
        marker, journal = tmp_path / "marker", tmp_path / "journal"
        marker.touch()
        name = run_remote(server, workflows, "agent_workflows.py", "wait_wf", "--marker", str(marker),
                          "--journal", str(journal), "--x", "4")
        execution = finished(server, name)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        assert execution.outputs["o0"] == 8
        assert journal_lines(journal)[0].split() == ["create", "n0", str(agent.pid)]
        assert not processes_in(server.home / "work" / "agents")  # no agent server of its own
    finally:
        stop_server(server)
        agent.terminate()
        agent.wait(30)
        agent_log.close()


class RecordingAgent(agent_pb2_grpc.AsyncAgentServiceServicer, agent_pb2_grpc.AgentMetadataServiceServicer):
    """An agent service of the test's own: it serves flytelite_wait, doubling x at once, and keeps the metadata
    of each CreateTask call."""

    def __init__(self) -> None:
        self.create_metadata: list[dict[str, str]] = []
        self._x: dict[bytes, int] = {}
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        agent_pb2_grpc.add_AsyncAgentServiceServicer_to_server(self, self.server)
        agent_pb2_grpc.add_AgentMetadataServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def ListAgents(self, request, context):  # noqa: N802 - the service's method names
        return agent_pb2.ListAgentsResponse(agents=[agent_pb2.Agent(
            name="recording", supported_task_categories=[agent_pb2.TaskCategory(name="flytelite_wait")])])

    def CreateTask(self, request, context):  # noqa: N802
        self.create_metadata.append(dict(context.invocation_metadata()))
        meta = str(len(self._x)).encode()
        self._x[meta] = request.inputs.literals["x"].scalar.primitive.integer
        return agent_pb2.CreateTaskResponse(resource_meta=meta)

    def GetTask(self, request, context):  # noqa: N802
        doubled = literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(
            integer=2 * self._x[request.resource_meta])))
        return agent_pb2.GetTaskResponse(resource=agent_pb2.Resource(
            phase=execution_pb2.TaskExecution.SUCCEEDED, outputs=literals_pb2.LiteralMap(literals={"o0": doubled})))

    def DeleteTask(self, request, context):  # noqa: N802
        return agent_pb2.DeleteTaskResponse()


def test_an_agent_call_continues_the_executions_trace(agent_env, workflows, tmp_path):
    """With tracing on, the task's launch is a span of the execution's trace and the agent's CreateTask call
    carries it as W3C traceparent metadata, for the agent's own spans to continue."""
    from tests.ops.otlp import Receiver

    agent, receiver = RecordingAgent(), Receiver()
    server = make_server(tmp_path / "server", config=(
        f"tracing: {{enabled: true, endpoint: '{receiver.url}'}}\n"
        "agent_service:\n  local_agents: false\n  resync_seconds: 0.3\n"
        f"  agents: {{recording: {{endpoint: '127.0.0.1:{agent.port}'}}}}\n"
        "  agent_for_task_types: {flytelite_wait: recording}\n"))
    try:
        server.start()
        name = run_remote(server, workflows, "agent_workflows.py", "wait_wf", "--marker", "unused",
                          "--journal", "unused", "--x", "21")
        execution = finished(server, name)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        assert execution.outputs["o0"] == 42
    finally:
        stop_server(server)  # sends the spans still buffered
        agent.server.stop(None)
        receiver.stop()
    (metadata,) = agent.create_metadata
    launches = receiver.named("launch agent task")
    assert len(launches) == 1, sorted(s.name for s in receiver.spans)
    launch = launches[0]
    assert metadata["traceparent"].startswith(f"00-{launch.trace_id.hex()}-{launch.span_id.hex()}-")
    rounds = {s.span_id for s in receiver.named("propeller round") if s.trace_id == launch.trace_id}
    assert launch.parent_span_id in rounds
