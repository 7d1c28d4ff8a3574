"""Flyte 1.16's launch plan concurrency policy: with `max` executions of a launch plan unfinished (any of its
versions), a SKIP policy refuses another with ALREADY_EXISTS and FlyteAdmin's message; simultaneous creates
admit exactly `max`, on one server and on three replicas of one PostgreSQL database."""

from __future__ import annotations

import os
import threading
import urllib.request
from datetime import timedelta

import grpc
import pytest
from flyteidl.admin import execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.console.layout import entity_url
from flytelite.testing import PG_ENV, make_server
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for

pytestmark = pytest.mark.e2e

P, D = "flytesnacks", "development"


def _register(server, code, version: str) -> None:
    pyflyte(server, "register", "--project", P, "--domain", D, "--version", version, "limited.py", cwd=code)


def _request(lp: str, version: str, marker: str) -> execution_pb2.ExecutionCreateRequest:
    lp_id = identifier_pb2.Identifier(resource_type=identifier_pb2.LAUNCH_PLAN, project=P, domain=D, name=lp,
                                      version=version)
    inputs = literals_pb2.LiteralMap(literals={"marker": literals_pb2.Literal(scalar=literals_pb2.Scalar(
        primitive=literals_pb2.Primitive(string_value=marker)))})
    return execution_pb2.ExecutionCreateRequest(project=P, domain=D, spec=execution_pb2.ExecutionSpec(
        launch_plan=lp_id), inputs=inputs)


def _create(server, request) -> tuple[str, str]:
    """("ok", execution name) or (status code name, message)."""
    with grpc.insecure_channel(server.endpoint) as channel:
        try:
            return "ok", admin_pb2_grpc.AdminServiceStub(channel).CreateExecution(request, timeout=120).id.name
        except grpc.RpcError as e:
            return e.code().name, e.details()


def _finish(servers, names: list[str], marker) -> None:
    marker.write_text("go")
    remote = remote_for(servers[0])
    for name in names:
        ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                         poll_interval=timedelta(seconds=0.5))
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error


@pytest.fixture
def code(tmp_path):
    return copy_workflows(tmp_path / "wf", "limited.py")


@pytest.fixture
def marker(tmp_path):
    """The file the held executions wait for; written at the end whatever happened, so none outlives the test."""
    path = tmp_path / "go"
    yield path
    path.write_text("go")


def test_a_skip_policy_refuses_a_launch_over_its_limit_across_versions(server, code, marker):
    _register(server, code, "lim-v1")
    first = _create(server, _request("one_at_a_time", "lim-v1", str(marker)))
    assert first[0] == "ok", first
    refused = _create(server, _request("one_at_a_time", "lim-v1", str(marker)))
    assert refused == ("ALREADY_EXISTS", "concurrency limit (1) reached for launch plan one_at_a_time; skipping "
                                         "execution")
    # Another version of the launch plan shares the limit.
    _register(server, code, "lim-v2")
    assert _create(server, _request("one_at_a_time", "lim-v2", str(marker)))[0] == "ALREADY_EXISTS"
    # pyflyte's launch fails (flytekit takes ALREADY_EXISTS for a name taken and then looks up an execution
    # without a name, as it does against FlyteAdmin), and nothing more runs.
    run = pyflyte(server, "run", "--remote", "--project", P, "--domain", D, "limited.py", "one_at_a_time",
                  "--marker", str(marker), cwd=code, check=False)
    assert run.returncode != 0 and "/console/projects" not in run.stdout, run.stdout + run.stderr
    executions, _ = remote_for(server).client.list_executions_paginated(P, D, limit=100)
    assert [e.id.name for e in executions if e.spec.launch_plan.name == "one_at_a_time"] == [first[1]]
    # Each refusal counts in FlyteAdmin's concurrency_limit_hits, by launch plan.
    metrics = urllib.request.urlopen(server.url + "/metrics", timeout=60).read().decode().splitlines()
    series = ('flyte:admin:admin:execution_manager:concurrency_limit_hits{domain="development",'
              'name="one_at_a_time",project="flytesnacks"} ')
    assert [float(line[len(series):]) >= 3 for line in metrics if line.startswith(series)] == [True], metrics
    _finish([server], [first[1]], marker)
    # The console's launch plan page shows the policy.
    page = urllib.request.urlopen(server.url + entity_url("launch_plan", P, D, "one_at_a_time", "lim-v1"),
                                  timeout=60).read().decode()
    assert "at most 1 unfinished executions (all versions)" in page
    # Once the first ended, there is room again.
    again = _create(server, _request("one_at_a_time", "lim-v2", str(marker)))
    assert again[0] == "ok", again
    _finish([server], [again[1]], marker)


def _race(servers, version: str, marker) -> list[tuple[str, str]]:
    """20 creates of `two_at_a_time` at the same moment, spread over the servers."""
    results: list[tuple[str, str]] = [("", "")] * 20
    start = threading.Barrier(20)

    def create(i: int) -> None:
        start.wait()
        results[i] = _create(servers[i % len(servers)], _request("two_at_a_time", version, str(marker)))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _admitted_exactly_two(results) -> list[str]:
    admitted = [name for status, name in results if status == "ok"]
    refused = [message for status, message in results if status == "ALREADY_EXISTS"]
    assert len(admitted) == 2 and len(refused) == 18, results
    assert all("concurrency limit (2) reached" in message for message in refused)
    return admitted


def test_twenty_simultaneous_creates_admit_exactly_the_limit(server, code, marker):
    _register(server, code, "race-v1")
    _finish([server], _admitted_exactly_two(_race([server], "race-v1", marker)), marker)


def test_twenty_simultaneous_creates_on_three_replicas_admit_exactly_the_limit(tmp_path, code, marker):
    if not os.environ.get(PG_ENV):
        pytest.skip("replicas share a PostgreSQL database (run with --db=postgresql)")
    home = tmp_path / "home"
    replicas = [make_server(tmp_path / f"replica{i}", home=home) for i in range(3)]
    for replica in replicas:
        replica.start()
    try:
        _register(replicas[0], code, "race-v1")
        _finish(replicas, _admitted_exactly_two(_race(replicas, "race-v1", marker)), marker)
    finally:
        for replica in replicas:
            replica.stop()
