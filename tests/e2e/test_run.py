"""`pyflyte run --remote` end to end: real flytekit, a real server process, real task processes."""

from __future__ import annotations

import os
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)


def wait(remote, name: str):
    execution = remote.fetch_execution(name=name)
    return remote.wait(execution, timeout=WAIT, poll_interval=timedelta(seconds=0.5))


def test_hello_world(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "hello.py")
    name = run_remote(server, folder, "hello.py", "hello_wf", "--name", "flytelite")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "hello flytelite"
    # The console URL pyflyte printed opens a real page about this execution.
    with urllib.request.urlopen(f"{server.url}/console/projects/flytesnacks/domains/development/executions/{name}") as r:
        page = r.read().decode()
    assert name in page and "SUCCEEDED" in page


def test_diamond_typed_values(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "diamond.py")
    name = run_remote(server, folder, "diamond.py", "diamond_wf", "--n", "5", "--scale", "1.5", "--color", "red")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    text = execution.outputs["o0"]
    assert text == "[('red', 10)]|p:5:7.5:None|True"
    point = execution.outputs.get("o1", as_type=dict)
    assert point == {"x": 6, "y": 7.5, "label": "joined"}
    assert execution.outputs["o2"] is None
    remote.sync_execution(execution, sync_nodes=True)
    node_ids = {n for n in execution.node_executions}
    assert {"n0", "n1", "n2", "n3"} <= node_ids
    assert all(n.closure.phase == 3 for k, n in execution.node_executions.items() if k.startswith("n"))


def test_single_task_execution(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "hello.py")
    name = run_remote(server, folder, "hello.py", "say_hello", "--name", "task")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "hello task"
    assert execution.spec.launch_plan.name == "say_hello" or execution.spec.launch_plan.name.endswith("say_hello")


def test_user_error_reaches_execution_error(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "failing.py")
    name = run_remote(server, folder, "failing.py", "failing_wf", "--x", "7")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "boom: x was 7, expected something else" in execution.error.message
    assert execution.error.kind == execution.error.ErrorKind.USER


def test_retries_run_until_success(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "failing.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "failing.py", "flaky_wf", "--marker_dir", str(markers))
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 2
    assert sorted(p.name for p in markers.iterdir()) == ["attempt-0", "attempt-1", "attempt-2"]
    remote.sync_execution(execution, sync_nodes=True)
    attempts = execution.node_executions["n0"].task_executions
    assert [t.id.retry_attempt for t in attempts] == [0, 1, 2]
    # TaskExecution phases: FAILED (or RETRYABLE_FAILED) twice, then SUCCEEDED.
    assert [t.closure.phase in (5, 8) for t in attempts[:2]] == [True, True]
    assert attempts[2].closure.phase == 3


def test_non_recoverable_user_error_is_not_retried(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "failing.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "failing.py", "stubborn_wf", "--marker_dir", str(markers))
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "stubborn failure on attempt 0" in execution.error.message
    assert sorted(p.name for p in markers.iterdir()) == ["attempt-0"]


def test_terminate_aborts_running_task(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "failing.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "failing.py", "sleepy_wf", "--seconds", "600", "--marker_dir", str(markers))
    pid_file = markers / "pid"
    deadline = time.monotonic() + 90
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    pid = int(pid_file.read_text())
    assert pid_alive(pid)
    remote.terminate(remote.fetch_execution(name=name), cause="test says stop")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.ABORTED
    deadline = time.monotonic() + 15
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(pid), "the task's process outlived its terminated execution"
    remote.sync_execution(execution, sync_nodes=True)
    assert execution.node_executions["n0"].closure.phase == 6  # core NodeExecution.Phase ABORTED


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
