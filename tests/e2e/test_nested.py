"""Nested execution end to end: branches, an inline subworkflow and dynamic workflows, run with real
`pyflyte run --remote` against a real server process and read back with FlyteRemote
(`sync_execution(..., sync_nodes=True)`: the children it lists under each nested node)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from flytekit.models.core.execution import NodeExecutionPhase, WorkflowExecutionPhase

from tests.e2e.flyte_cli import copy_workflows, run_remote
from tests.e2e.test_run import pid_alive

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
SUCCEEDED, SKIPPED = NodeExecutionPhase.SUCCEEDED, NodeExecutionPhase.SKIPPED


def wait(remote, name: str):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    return remote.sync_execution(execution, sync_nodes=True)


def launch_more(remote, first, inputs: list[dict]) -> list:
    """Run the launch plan `first` ran with other inputs, all at once, and wait for every one."""
    lp_id = first.spec.launch_plan
    lp = remote.fetch_launch_plan(lp_id.project, lp_id.domain, lp_id.name, lp_id.version)
    started = [remote.execute(lp, inputs=i) for i in inputs]
    with ThreadPoolExecutor(len(started)) as pool:
        return list(pool.map(lambda ex: wait(remote, ex.id.name), started))


def children(node) -> dict:
    return node.subworkflow_node_executions


def real_children(node) -> dict:
    """Children other than the nested start and end nodes (whose ids may be hashed)."""
    return {k: v for k, v in children(node).items() if v.metadata.spec_node_id not in ("start-node", "end-node")}


def test_branches(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "nested_branches.py")
    first = wait(remote, run_remote(server, folder, "nested_branches.py", "nested_branches_wf", "--x", "12"))
    nested, elif_, failed = launch_more(remote, first, [{"x": 4}, {"x": 3}, {"x": -1}])

    # x > 10: a condition on the workflow input; the branch's output feeds n2.
    assert first.closure.phase == WorkflowExecutionPhase.SUCCEEDED, first.error
    assert first.outputs["o0"] == 145
    branch = first.node_executions["n1"]
    # FlyteRemote knows no interface for a branch node: read its output with an explicit type.
    assert branch.closure.phase == SUCCEEDED and branch.outputs.get("o0", as_type=int) == 144
    (arm,) = children(branch).values()
    assert (arm.id.node_id, arm.metadata.spec_node_id, arm.metadata.retry_group) == ("n1-0-n1-n0", "n1-n0", "0")
    assert arm.closure.phase == SUCCEEDED and arm.outputs["o0"] == 144
    assert arm.task_executions[0].closure.phase == 3
    assert first.node_executions["n2"].inputs["x"] == 144

    # x == 4: the condition on a task output (is_even) picks the nested conditional, whose if arm runs.
    assert nested.closure.phase == WorkflowExecutionPhase.SUCCEEDED, nested.error
    assert nested.outputs["o0"] == 9
    (inner,) = children(nested.node_executions["n1"]).values()
    assert (inner.id.node_id, inner.metadata.spec_node_id) == ("n1-0-n1-n1", "n1-n1")
    (leaf,) = children(inner).values()
    assert leaf.metadata.spec_node_id == "n1-n1-n0" and leaf.outputs["o0"] == 8
    assert leaf.closure.phase == SUCCEEDED

    # x == 3: the elif.
    assert elif_.outputs["o0"] == 7
    assert [n.metadata.spec_node_id for n in children(elif_.node_executions["n1"]).values()] == ["n1-n2"]

    # x == -1: no arm holds, the `.fail()` message fails the execution; n2 never runs.
    assert failed.closure.phase == WorkflowExecutionPhase.FAILED
    assert failed.error.message == "[UserProvidedError] x must be positive"
    assert failed.error.kind == failed.error.ErrorKind.USER
    assert failed.node_executions["n1"].closure.phase == NodeExecutionPhase.FAILED
    assert "n2" not in failed.node_executions and not children(failed.node_executions["n1"])


def test_subworkflow(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "nested_subworkflow.py")
    ok = wait(remote, run_remote(server, folder, "nested_subworkflow.py", "nested_subworkflow_wf", "--x", "3"))
    (bad,) = launch_more(remote, ok, [{"x": 11}])

    assert ok.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ok.error
    assert ok.outputs["o0"] == 19
    node = ok.node_executions["n0"]
    assert node.metadata.is_parent_node and node.closure.phase == SUCCEEDED
    assert node.outputs["o0"] == 18 and node.inputs["a"] == 3
    assert set(real_children(node)) == {"n0-0-n0", "n0-0-n1", "n0-0-n2"}
    subs = children(node)
    assert subs["n0-0-n1"].metadata.spec_node_id == "n1" and subs["n0-0-n1"].outputs["o0"] == 9
    assert all(subs[k].closure.phase == SUCCEEDED for k in ("n0-0-n0", "n0-0-n1", "n0-0-n2"))
    assert subs["n0-0-n2"].task_executions[0].closure.phase == 3

    # A failing child fails the subworkflow node and the execution with the child's own message.
    assert bad.closure.phase == WorkflowExecutionPhase.FAILED
    assert "n=121 is too big" in bad.error.message
    node = bad.node_executions["n0"]
    assert node.closure.phase == NodeExecutionPhase.FAILED
    # Lists trim errors (as FlyteAdmin does); GetNodeExecution has the whole message.
    assert "n=121 is too big" in remote.client.get_node_execution(node.id).closure.error.message
    assert children(node)["n0-0-n1"].closure.phase == NodeExecutionPhase.FAILED
    assert "n0-0-n2" not in children(node)


def test_dynamic_fan_out_and_dynamic_in_dynamic(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "nested_dynamic.py")
    fan = wait(remote, run_remote(server, folder, "nested_dynamic.py", "nested_dynamic_wf", "--n", "4"))
    assert fan.closure.phase == WorkflowExecutionPhase.SUCCEEDED, fan.error
    assert fan.outputs["o0"] == 0 + 1 + 4 + 9
    node = fan.node_executions["n0"]
    assert node.metadata.is_parent_node and node.metadata.is_dynamic
    assert node.closure.phase == SUCCEEDED and node.outputs["o0"] == [0, 1, 4, 9]
    tasks = real_children(node)
    assert sorted(tasks) == ["n0-0-dn0", "n0-0-dn1", "n0-0-dn2", "n0-0-dn3"]
    assert [tasks[f"n0-0-dn{i}"].outputs["o0"] for i in range(4)] == [0, 1, 4, 9]
    assert all(t.metadata.spec_node_id.startswith("dn") and t.metadata.retry_group == "0" for t in tasks.values())
    assert all(t.task_executions[0].closure.phase == 3 for t in tasks.values())
    # FlyteRemote gathers the children's task executions under a dynamic node; the parent task ran once.
    assert sorted(len(attempts) for attempts in node.task_executions) == [0, 0, 1, 1, 1, 1]
    parent_tasks, _ = remote.client.list_task_executions_paginated(node.id)
    assert [(t.id.retry_attempt, t.closure.phase) for t in parent_tasks] == [(0, 3)]
    assert node.interface is not None and "o0" in node.interface.outputs

    dyn_dyn = wait(remote, run_remote(server, folder, "nested_dynamic.py", "nested_dyn_dyn_wf", "--n", "3"))
    assert dyn_dyn.closure.phase == WorkflowExecutionPhase.SUCCEEDED, dyn_dyn.error
    assert dyn_dyn.outputs["o0"] == 5
    outer = dyn_dyn.node_executions["n0"]
    assert outer.metadata.is_dynamic and outer.outputs["o0"] == 5
    inner = children(outer)["n0-0-dn0"]
    assert inner.metadata.is_dynamic and inner.metadata.is_parent_node and inner.outputs["o0"] == [0, 1, 4]
    leaves = real_children(inner)
    assert sorted(leaves) == ["n0-0-dn0-0-dn0", "n0-0-dn0-0-dn1", "n0-0-dn0-0-dn2"]
    assert all(v.closure.phase == SUCCEEDED for v in leaves.values())
    # Ids longer than 20 characters are hashed as FlytePropeller hashes them; spec ids stay readable.
    assert {v.metadata.spec_node_id for v in children(inner).values()} >= {"start-node", "end-node"}
    assert any(k.startswith("f") and len(k) == 8 for k in children(inner))
    assert children(outer)["n0-0-dn1"].inputs["xs"] == [0, 1, 4]


def test_terminate_kills_the_task_processes_of_nested_nodes(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "nested_dynamic.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "nested_dynamic.py", "nested_dyn_hold_wf", "--marker_dir", str(markers),
                      "--seconds", "600")
    deadline = time.monotonic() + 90
    while not ((markers / "pid").exists() and (markers / "pid").read_text()):
        assert time.monotonic() < deadline, "the nested task never started"
        time.sleep(0.2)
    pid = int((markers / "pid").read_text())
    remote.terminate(remote.fetch_execution(name=name), cause="stop the nested task")
    execution = wait(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.ABORTED
    node = execution.node_executions["n0"]
    assert node.closure.phase == NodeExecutionPhase.ABORTED
    (child,) = real_children(node).values()
    assert child.id.node_id == "n0-0-dn0" and child.closure.phase == NodeExecutionPhase.ABORTED
    deadline = time.monotonic() + 15
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"the nested task's process {pid} is still running"
        time.sleep(0.2)
