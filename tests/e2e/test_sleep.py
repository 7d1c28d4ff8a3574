"""core-sleep tasks (Flyte's sleep plugin): a leaf waits its duration out without a process, run with real
`pyflyte run --remote` and the benchmarks' stand-in for flytekit's sleep plugin."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from flytekit.models.core.execution import NodeExecutionPhase, WorkflowExecutionPhase

from tests.attempts import attempts_processes
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote, wait_for
from tests.e2e.test_nested import real_children, wait

pytestmark = pytest.mark.e2e
STAND_IN = Path(__file__).parents[2] / "benchmarks" / "flyte_benchmarks" / "flytekitplugins"


def sleep_folder(tmp_path: Path) -> Path:
    folder = copy_workflows(tmp_path / "wf", "sleep_flows.py")
    shutil.copytree(STAND_IN, folder / "flytekitplugins")
    return folder


def ended(closure) -> datetime:
    """When a node or task execution ended, in UTC (flytekit's models give some times without their zone)."""
    started = closure.started_at
    return (started if started.tzinfo else started.replace(tzinfo=timezone.utc)) + closure.duration


def test_sleeping_leaves_run_no_process(server, remote, tmp_path):
    """20 leaves of 3 s: none is a process (the dynamic parent is the only one), and each sleeps its 3 s."""
    name = run_remote(server, sleep_folder(tmp_path), "sleep_flows.py", "naps_wf", "--n", "20", "--seconds", "3")
    most = 0

    def done() -> bool:
        nonlocal most
        most = max(most, len(attempts_processes(name)))
        return remote.fetch_execution(name=name).is_done

    wait_for(done, "the naps to end", timeout=300)
    ex = wait(remote, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 20
    node = ex.node_executions["n0"]
    (parent,), _ = remote.client.list_task_executions_paginated(node.id)
    # The leaves start sleeping once the dynamic parent's task has ended.
    slept_from = ended(parent.closure)
    leaves = real_children(node)
    assert len(leaves) == 20
    for leaf in leaves.values():
        (attempt,) = leaf.task_executions
        assert attempt.closure.phase == 3 and not attempt.closure.logs
        assert ended(leaf.closure) >= slept_from + timedelta(seconds=3), leaf.closure
    assert most <= 1, most


def test_a_sleep_task_without_a_duration_input_fails_saying_why(server, remote, tmp_path):
    ex = wait(remote, run_remote(server, sleep_folder(tmp_path), "sleep_flows.py", "bad_nap_wf"))
    assert ex.closure.phase == WorkflowExecutionPhase.FAILED
    assert ex.error.code == "BadTaskSpecification", ex.error
    assert "input 'seconds' of task" in ex.error.message and "must be typed as duration" in ex.error.message


def test_twenty_thousand_leaves_in_one_dynamic_workflow_finish_in_bounded_memory(fresh_server, tmp_path):
    """One dynamic workflow of 20,000 core-sleep leaves, all in flight at once: each runs once, and the server's
    peak memory stays under the 1 GiB that Flyte's benchmark sets for 200,000 actions."""
    remote = remote_for(fresh_server)
    name = run_remote(fresh_server, sleep_folder(tmp_path), "sleep_flows.py", "many_naps_wf")
    wait_for(lambda: remote.fetch_execution(name=name).is_done, "the naps to end", timeout=600)
    # Not FlyteRemote.wait, which would fetch every node and task execution one by one.
    ex = remote.sync_execution(remote.fetch_execution(name=name), sync_nodes=False)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 20_000
    leaves, token = [], ""
    while True:  # a page holds at most 10,000
        page, token = remote.client.list_node_executions(ex.id, limit=10_000, token=token,
                                                         unique_parent_id="n0")
        leaves += [leaf for leaf in page if leaf.metadata.spec_node_id.startswith("dn")]
        if not token:
            break
    assert len(leaves) == 20_000 and all(leaf.closure.phase == NodeExecutionPhase.SUCCEEDED for leaf in leaves)
    assert peak_memory_mib(fresh_server.proc.pid) < 1024


def peak_memory_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM)."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
