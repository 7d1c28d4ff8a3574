"""Launch plans as nodes, gate nodes and the execution lifecycle (relaunch, recover) end to end:
real `pyflyte run --remote`, a real server process, real task processes, FlyteRemote reading back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.exceptions.user import FlyteInvalidInputException
from flytekit.models.core.execution import NodeExecutionPhase, WorkflowExecutionPhase
from flytekit.models.core.identifier import WorkflowExecutionIdentifier

from tests.e2e.flyte_cli import copy_workflows, run_remote, wait_for
from tests.e2e.test_run import pid_alive

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=120)
P, D = "flytesnacks", "development"


def wait(remote, name: str):
    return remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))


def signal_ids(remote, name: str) -> set[str]:
    return {s.id.signal_id for s in remote.list_signals(name)}


# -- launch plans as nodes --------------------------------------------------------------------
def test_launch_plan_node_runs_a_linked_child_execution(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "child_flows.py")
    name = run_remote(server, folder, "child_flows.py", "child_parent", "--x", "3")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 81
    remote.sync_execution(execution, sync_nodes=True)
    node = execution.node_executions["n0"]
    assert node.closure.phase == NodeExecutionPhase.SUCCEEDED
    child_id = node.closure.workflow_node_metadata.execution_id
    (child,) = node.workflow_executions
    assert child.id.name == child_id.name != name
    assert child.closure.phase == WorkflowExecutionPhase.SUCCEEDED
    assert child.spec.launch_plan.name == "e2e_child_sub_lp"
    assert child.spec.metadata.mode == 4  # CHILD_WORKFLOW
    assert child.spec.metadata.parent_node_execution.execution_id.name == name
    assert child.outputs["o0"] == 9 and node.outputs["o0"] == 9
    assert child.node_executions["n0"].task_executions[0].closure.phase == 3  # the child's task SUCCEEDED


def test_terminating_the_parent_aborts_the_child(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "child_flows.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "child_flows.py", "child_parent_holding", "--marker_dir", str(markers),
                      "--seconds", "600")
    pid = int(wait_for(lambda: (markers / "pid").exists() and (markers / "pid").read_text(), "child task start", 90))
    parent = remote.fetch_execution(name=name)
    remote.sync_execution(parent, sync_nodes=True)
    child_name = parent.node_executions["n0"].closure.workflow_node_metadata.execution_id.name
    remote.terminate(parent, cause="parent says stop")
    parent = wait(remote, name)
    child = wait(remote, child_name)
    assert parent.closure.phase == WorkflowExecutionPhase.ABORTED
    assert child.closure.phase == WorkflowExecutionPhase.ABORTED
    assert "parent says stop" in child.closure.abort_metadata.cause
    wait_for(lambda: not pid_alive(pid), "the child's task process to end", 15)


# -- gates ------------------------------------------------------------------------------------
def test_sleep_gate(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "gate_flows.py")
    name = run_remote(server, folder, "gate_flows.py", "gate_sleep_wf", "--x", "4")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 40
    remote.sync_execution(execution, sync_nodes=True)
    gate = execution.node_executions["n0"]
    assert gate.closure.phase == NodeExecutionPhase.SUCCEEDED
    assert gate.closure.duration >= timedelta(seconds=1.9)


@pytest.mark.parametrize("approved", [True, False])
def test_approve_gate_through_set_signal(server, remote, tmp_path, approved):
    folder = copy_workflows(tmp_path / "wf", "gate_flows.py")
    name = run_remote(server, folder, "gate_flows.py", "gate_approve_wf", "--x", "7")
    wait_for(lambda: "review" in signal_ids(remote, name), "the approval signal", 90)
    assert not remote.fetch_execution(name=name).is_done
    remote.set_signal("review", name, approved)
    execution = wait(remote, name)
    remote.sync_execution(execution, sync_nodes=True)
    gate = execution.node_executions["n1"]
    if approved:
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        assert execution.outputs["o0"] == "approved 70"
        assert gate.closure.phase == NodeExecutionPhase.SUCCEEDED
        # FlyteRemote leaves gate outputs unread; the node's data holds the approved value.
        gate_data = remote.client.get_node_execution_data(gate.id)
        assert gate_data.full_outputs.literals["o0"].scalar.primitive.integer == 70
    else:
        assert execution.closure.phase == WorkflowExecutionPhase.FAILED
        assert "reject" in execution.error.message
        assert gate.closure.phase == NodeExecutionPhase.FAILED
        assert "n2" not in execution.node_executions


def test_wait_for_input_takes_a_typed_value(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "gate_flows.py")
    name = run_remote(server, folder, "gate_flows.py", "gate_input_wf", "--x", "2")
    wait_for(lambda: "title" in signal_ids(remote, name), "the input signal", 90)
    with pytest.raises(FlyteInvalidInputException) as refused:
        remote.set_signal("title", name, 12)
    assert "expects a value of type" in refused.value.__cause__.details()
    remote.set_signal("title", name, "chapter")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == "chapter #2"
    (signal,) = remote.list_signals(name)
    assert signal.value.scalar.primitive.string_value == "chapter"


def test_gate_timeout_fails_the_execution(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "gate_flows.py")
    name = run_remote(server, folder, "gate_flows.py", "gate_timeout_wf", "--x", "1")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert "timeout" in execution.error.message
    remote.sync_execution(execution, sync_nodes=True)
    assert execution.node_executions["n1"].closure.phase == NodeExecutionPhase.TIMED_OUT


# -- lifecycle --------------------------------------------------------------------------------
def markers_named(folder: Path, prefix: str) -> int:
    return len(list(folder.glob(f"{prefix}-*"))) if folder.exists() else 0


def test_recover_reruns_only_the_failed_part_and_relaunch_reruns_everything(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "child_lifecycle.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "child_lifecycle.py", "lifecycle_wf", "--marker_dir", str(markers),
                      "--word", "hi")
    failed = wait(remote, name)
    assert failed.closure.phase == WorkflowExecutionPhase.FAILED
    assert "not allowed yet" in failed.error.message
    assert (markers_named(markers, "first"), markers_named(markers, "second")) == (1, 1)

    (markers / "allow").touch()
    original = WorkflowExecutionIdentifier(P, D, name)
    recovered_id = remote.client.recover_execution(original)
    recovered = wait(remote, recovered_id.name)
    assert recovered.closure.phase == WorkflowExecutionPhase.SUCCEEDED, recovered.error
    assert recovered.outputs["o0"] == "HI!"
    assert recovered.spec.metadata.mode == 5  # RECOVERED
    assert recovered.spec.metadata.reference_execution.name == name
    # The first task succeeded before: its outputs were copied, it did not run again.
    assert (markers_named(markers, "first"), markers_named(markers, "second")) == (1, 2)
    remote.sync_execution(recovered, sync_nodes=True)
    assert recovered.node_executions["n0"].closure.phase == NodeExecutionPhase.RECOVERED
    # flytekit counts RECOVERED as not done and will not resolve its outputs; the node's data has them.
    first_data = remote.client.get_node_execution_data(recovered.node_executions["n0"].id)
    assert first_data.full_outputs.literals["o0"].scalar.primitive.string_value == "HI"
    assert recovered.node_executions["n1"].closure.phase == NodeExecutionPhase.SUCCEEDED

    relaunched_id = remote.client.relaunch_execution(original)
    relaunched = wait(remote, relaunched_id.name)
    assert relaunched.closure.phase == WorkflowExecutionPhase.SUCCEEDED, relaunched.error
    assert relaunched.outputs["o0"] == "HI!"
    assert relaunched.spec.metadata.mode == 3  # RELAUNCH
    assert (markers_named(markers, "first"), markers_named(markers, "second")) == (2, 3)
