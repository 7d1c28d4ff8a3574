"""Failure handling, timeouts, retries and max parallelism end to end: real pyflyte, a real server, real tasks."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from flyteidl.core import execution_pb2
from flytekit.models.core.execution import WorkflowExecutionPhase

from tests.e2e.flyte_cli import copy_workflows, run_remote
from tests.e2e.test_run import pid_alive

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
NodePhase = execution_pb2.NodeExecution
TaskPhase = execution_pb2.TaskExecution


def wait(remote, name: str, sync_nodes: bool = True):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.5))
    if sync_nodes:
        execution = remote.sync_execution(execution, sync_nodes=True)
    return execution


@pytest.fixture
def flows(tmp_path):
    return copy_workflows(tmp_path / "wf", "fh_flows.py")


def test_on_failure_handler_runs_with_the_error_and_the_execution_fails_with_the_original_one(
        server, remote, flows, tmp_path):
    markers = tmp_path / "markers"
    name = run_remote(server, flows, "fh_flows.py", "fh_on_failure_wf", "--x", "7", "--marker_dir", str(markers))
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "fh_refuse will not take 7" in execution.error.message
    assert execution.error.kind == execution.error.ErrorKind.USER
    cleanup = json.loads((markers / "cleanup.json").read_text())
    assert cleanup["x"] == 7 and cleanup["failed_node_id"] == "fn0"
    assert "fh_refuse will not take 7" in cleanup["message"]
    nodes = execution.node_executions
    assert nodes["n0"].closure.phase == NodePhase.FAILED
    assert nodes["fn0"].closure.phase == NodePhase.SUCCEEDED
    assert nodes["fn0"].metadata.spec_node_id == "fn0"
    assert [t.closure.phase for t in nodes["fn0"].task_executions] == [TaskPhase.SUCCEEDED]


def test_fail_after_executable_nodes_complete_lets_independent_branches_finish(server, remote, flows, tmp_path):
    markers = tmp_path / "markers"
    name = run_remote(server, flows, "fh_flows.py", "fh_keep_going_wf", "--marker_dir", str(markers))
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "fh_fail_fast failed first" in execution.error.message
    nodes = execution.node_executions
    # The failing node failed first; the independent branch (and what depends on it) still ran to the end.
    assert nodes["n0"].closure.phase == NodePhase.FAILED
    assert nodes["n1"].closure.phase == NodePhase.SUCCEEDED
    assert nodes["n2"].closure.phase == NodePhase.SUCCEEDED
    assert (markers / "slow-done").exists() and (markers / "after-slow-done").exists()
    failed_at = nodes["n0"].closure.updated_at
    assert failed_at < nodes["n2"].closure.updated_at <= execution.closure.updated_at


@pytest.mark.parametrize("workflow_name, task_pid", [("fh_task_timeout_wf", "overstays.pid"),
                                                     ("fh_node_timeout_wf", "sleeps.pid")])
def test_a_task_past_its_timeout_is_killed_and_its_node_times_out(server, remote, flows, tmp_path,
                                                                   workflow_name, task_pid):
    markers = tmp_path / "markers"
    started = time.monotonic()
    name = run_remote(server, flows, "fh_flows.py", workflow_name, "--marker_dir", str(markers))
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "task execution timeout [3s] expired" in execution.error.message
    assert time.monotonic() - started < 60  # the task sleeps for 120 s
    node = execution.node_executions["n0"]
    assert node.closure.phase == NodePhase.TIMED_OUT
    assert "timeout [3s] expired" in node.closure.error.message
    pid = json.loads((markers / task_pid).read_text())
    deadline = time.monotonic() + 15
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(pid), "the task's process outlived its timeout"


def test_system_and_user_retries_have_their_own_budgets(server, remote, flows, tmp_path):
    markers = tmp_path / "markers"
    name = run_remote(server, flows, "fh_flows.py", "fh_retries_wf", "--marker_dir", str(markers))
    execution = wait(remote, name)
    # retries=1 allows two user attempts; the killed attempt is a system error and did not use one up.
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 2
    assert sorted(p.name for p in markers.iterdir()) == ["attempt-0", "attempt-1", "attempt-2"]
    attempts = execution.node_executions["n0"].task_executions
    assert [t.id.retry_attempt for t in attempts] == [0, 1, 2]
    assert [t.closure.phase for t in attempts] == [TaskPhase.FAILED, TaskPhase.FAILED, TaskPhase.SUCCEEDED]
    killed, flaky = attempts[0].closure.error, attempts[1].closure.error
    assert killed.kind == execution_pb2.ExecutionError.SYSTEM and "SIGKILL" in killed.message
    assert flaky.kind == execution_pb2.ExecutionError.USER and "recoverable failure on attempt 1" in flaky.message


def _max_overlap(markers) -> int:
    spans = [json.loads(p.read_text()) for p in markers.glob("busy-*.json")]
    assert len(spans) == 6
    events = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans])
    running = most = 0
    for _, delta in events:
        running += delta
        most = max(most, running)
    return most


@pytest.mark.parametrize("entity, extra, cap", [("fh_fan_out_capped", [], 2),
                                                ("fh_fan_out_wf", ["--max-parallelism", "3"], 3)])
def test_max_parallelism_caps_running_tasks(server, remote, flows, tmp_path, entity, extra, cap):
    """A launch plan's max_parallelism, or the execution's own, bounds how many tasks run at once."""
    from tests.e2e.flyte_cli import pyflyte

    markers = tmp_path / "markers"
    proc = pyflyte(server, "run", "--remote", "--project", "flytesnacks", "--domain", "development", *extra,
                   "fh_flows.py", entity, "--marker_dir", str(markers), cwd=flows)
    from tests.e2e.flyte_cli import EXECUTION_URL

    name = EXECUTION_URL.search(proc.stdout + proc.stderr).group(3)
    execution = wait(remote, name, sync_nodes=False)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == [0, 1, 2, 3, 4, 5]
    assert execution.spec.max_parallelism == cap
    assert _max_overlap(markers) == cap


# -- other task types ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def types_server(tmp_path_factory):
    """A server of this module's own: its config maps the test's raw-container image to a local process."""
    from flytelite.testing import make_server

    folder = tmp_path_factory.mktemp("types-server")
    srv = make_server(folder, config='raw_container_images:\n  "localhost/flytelite-test/shell:1": local\n')
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def types_remote(types_server):
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    return FlyteRemote(FlyteConfig.auto(str(types_server.config_path)), default_project="flytesnacks",
                       default_domain="development")


@pytest.fixture
def types_flows(tmp_path):
    return copy_workflows(tmp_path / "wf", "types_flows.py")


def test_shell_task_runs_its_script(types_server, types_remote, types_flows):
    name = run_remote(types_server, types_flows, "types_flows.py", "types_shell_wf", "--greeting", "ahoy")
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "shell says ahoy"
    assert execution.node_executions["n0"].task_executions[0].closure.phase == TaskPhase.SUCCEEDED


def test_container_task_runs_its_command_with_inputs_and_outputs_as_files(types_server, types_remote,
                                                                          types_flows, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("a document\n")
    name = run_remote(types_server, types_flows, "types_flows.py", "types_container_wf", "--a", "2", "--b", "0.5",
                      "--name", "container", "--doc", str(doc))
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 2.5
    assert execution.outputs["o1"] == "hello container"
    assert execution.outputs["o2"] == "a document\nseen by the container"
    task = execution.node_executions["n0"].task_executions[0]
    assert task.closure.phase == TaskPhase.SUCCEEDED and task.id.task_id.name == "types_add"


def test_container_task_with_an_unmapped_image_fails_naming_the_image_and_the_config_key(
        types_server, types_remote, types_flows):
    name = run_remote(types_server, types_flows, "types_flows.py", "types_unmapped_wf", "--a", "1")
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    message = execution.error.message
    assert "'ghcr.io/flytelite-test/not-mapped:1'" in message and "raw_container_images" in message
    assert execution.error.kind == execution.error.ErrorKind.USER


def test_eager_workflow_runs_its_tasks_as_executions_and_returns_outputs(types_server, types_remote, types_flows):
    name = run_remote(types_server, types_flows, "types_flows.py", "types_eager", "--x", "3")
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    # a = 6, b = 18, c = 21
    assert execution.outputs["o0"] == 45
    children = _eager_children(types_remote, name)
    assert [n for n, _ in children] == ["types_double", "types_triple", "types_triple"]
    assert all(e.closure.phase == WorkflowExecutionPhase.SUCCEEDED for _, e in children)


def _eager_children(remote, parent: str) -> list:
    """(task name, execution) of each execution an eager task started (flytekit labels them eager-exec=<parent>)."""
    executions, _ = remote.client.list_executions_paginated("flytesnacks", "development", limit=200)
    children = [(e.spec.launch_plan.name.rsplit(".", 1)[-1], e) for e in executions
                if (e.spec.labels.values or {}).get("eager-exec") == parent]
    return sorted(children, key=lambda pair: pair[0])


def test_failing_eager_workflow_fails_naming_the_failed_task(types_server, types_remote, types_flows):
    name = run_remote(types_server, types_flows, "types_flows.py", "types_eager_fails", "--x", "2")
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "Error executing types_flows.types_reject" in execution.error.message
    children = dict(_eager_children(types_remote, name))
    assert set(children) == {"types_double", "types_reject"}
    assert children["types_double"].closure.phase == WorkflowExecutionPhase.SUCCEEDED
    failed = types_remote.fetch_execution(name=children["types_reject"].id.name)
    assert failed.closure.phase == WorkflowExecutionPhase.FAILED
    assert "types_reject does not take 4" in failed.error.message


def test_sqlite3_task_queries_a_database_with_flytekits_own_executor(types_server, types_remote, tmp_path):
    # flytekit's SQLite3TaskExecutor reads with pandas and writes the schema as parquet: the task's
    # environment (here the server's interpreter, config `images`) must have pandas and pyarrow.
    pytest.importorskip("pandas", reason="SQLite3Task needs pandas in the task environment")
    pytest.importorskip("pyarrow", reason="SQLite3Task's schema output needs pyarrow in the task environment")
    import sqlite3

    folder = copy_workflows(tmp_path / "wf", "types_sqlite.py")
    with sqlite3.connect(folder / "types_items.db") as con:
        con.execute("CREATE TABLE items (name TEXT, qty INTEGER)")
        con.executemany("INSERT INTO items VALUES (?, ?)", [("bolt", 12), ("nut", 3), ("gear", 7)])
    name = run_remote(types_server, folder, "types_sqlite.py", "types_sql_wf", "--min_qty", "5")
    execution = wait(types_remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == ["bolt:12", "gear:7"]
    sql_task = execution.node_executions["n0"].task_executions[0]
    assert sql_task.id.task_id.name == "types_sql" and sql_task.closure.phase == TaskPhase.SUCCEEDED
