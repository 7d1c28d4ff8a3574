"""Map tasks end to end: real flytekit map_task programs (ArrayNode) through `pyflyte run --remote`, a real
server and real task processes; results read back with FlyteRemote, items included."""

from __future__ import annotations

import json
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import NodeExecutionPhase, TaskExecutionPhase, WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.plugins.local import folders
from tests.e2e.flyte_cli import copy_workflows, run_remote, wait_for

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=120)


def finished(remote, name: str):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    return remote.sync_execution(execution, sync_nodes=True)


def items_of(node_execution) -> list:
    """The items FlyteRemote lists for an array node: the external resources of its one task execution."""
    [task_execution] = node_execution.task_executions
    return list(task_execution.closure.metadata.external_resources)


def max_overlap(marker_dir: Path) -> int:
    spans = [tuple(map(float, p.read_text().split())) for p in marker_dir.iterdir()]
    return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


def test_plain_partial_and_concurrent_maps(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "map_flows.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "map_flows.py", "map_plain_wf", "--xs", "[3, 1, 4, 1]", "--factor", "10",
                      "--marker_dir", str(markers))
    execution = finished(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error

    # Outputs keep item order; a downstream task consumes the gathered list.
    assert execution.outputs["o0"] == [9, 1, 16, 1]
    assert execution.outputs["o1"] == 27
    # A partial-bound input reaches every item whole.
    assert execution.outputs["o2"] == [30, 10, 40, 10]
    # Each item saw its own index in FLYTE_K8S_ARRAY_INDEX.
    assert execution.outputs["o3"] == ["3@0", "1@1", "4@2", "1@3"]
    # concurrency=2: never more than two items ran at once.
    assert len(list(markers.iterdir())) == 4 and max_overlap(markers) <= 2

    nodes = execution.node_executions
    for node_id in ("n0", "n1", "n2"):
        node = nodes[node_id]
        assert node.metadata.is_array and node.closure.phase == NodeExecutionPhase.SUCCEEDED
        items = items_of(node)
        assert [(r.index, r.retry_attempt, r.phase) for r in items] == [(i, 0, TaskExecutionPhase.SUCCEEDED)
                                                                       for i in range(4)]
        assert all(r.external_id and r.logs for r in items)
        assert items[2].logs[0].name.endswith("-2")
    # The array node's task execution carries the whole lists as its inputs and outputs.
    [squares] = nodes["n0"].task_executions
    assert squares.inputs["x"] == [3, 1, 4, 1] and squares.outputs["o0"] == [9, 1, 16, 1]
    assert not nodes["n3"].metadata.is_array


def test_min_success_ratio_turns_a_failed_item_into_none(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "map_flows.py")
    name = run_remote(server, folder, "map_flows.py", "map_tolerant_wf", "--xs", "[1, -2, 3]")
    execution = finished(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == [101, None, 103]
    items = items_of(execution.node_executions["n0"])
    assert [(r.index, r.phase) for r in items] == [(0, TaskExecutionPhase.SUCCEEDED), (1, TaskExecutionPhase.FAILED),
                                                    (2, TaskExecutionPhase.SUCCEEDED)]


def test_failed_item_fails_a_strict_map_with_its_error(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "map_flows.py")
    name = run_remote(server, folder, "map_flows.py", "map_strict_wf", "--xs", "[1, -2, 3]")
    execution = finished(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    message = execution.error.message
    assert "1 of 3 items of array node n0 failed, and at least 3 must succeed" in message, message
    assert "negative input -2 at index 1" in message
    node = execution.node_executions["n0"]
    assert node.closure.phase == NodeExecutionPhase.FAILED
    items = {r.index: r.phase for r in items_of(node)}
    assert items[1] == TaskExecutionPhase.FAILED


def test_server_killed_mid_map_resumes_without_rerunning_items(fresh_server, tmp_path):
    server = fresh_server
    remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                         default_domain="development")
    folder = copy_workflows(tmp_path / "wf", "map_flows.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "map_flows.py", "map_restart_wf", "--xs", "[0, 0, 4, 4, 0]",
                      "--marker_dir", str(markers))

    def started(index: int) -> bool:
        return any(markers.glob(f"item-{index}-*"))

    deadline = time.monotonic() + 90
    while not started(2) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started(2), "the slow items never started"

    server.stop(sig=signal.SIGKILL)
    server.start()

    execution = finished(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == [0, 0, 40, 40, 0]
    # Every item ran exactly once: finished ones were not rerun, running ones were waited for.
    runs = sorted(p.name.rsplit("-", 1)[0] for p in markers.iterdir())
    assert runs == [f"item-{i}" for i in range(5)], runs
    assert [r.phase for r in items_of(execution.node_executions["n0"])] == [TaskExecutionPhase.SUCCEEDED] * 5
    # The items that ended before the kill had their folders handed to the cleaner, which waits while tasks run:
    # the restarted server deletes them, with the others.
    attempts = server.home / "work"
    run = attempts / f"flytesnacks-development-{name}"
    temp_root = Path(folders.temp_root(attempts))

    def left() -> list[str]:
        return ([p.name for p in run.iterdir()] if run.exists() else []) + \
            [p.name for p in temp_root.iterdir() if not p.name.startswith("zygote-")]

    wait_for(lambda: not left(), "the killed server's finished items' folders to be deleted")


def test_an_array_of_a_launch_plan_runs_a_child_execution_per_item_with_its_concurrency(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "lp_map_flows.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "lp_map_flows.py", "lp_map_wf", "--xs", "[3, 1, 4, 1]",
                      "--marker_dirs", json.dumps([str(markers)] * 4))
    execution = finished(remote, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    # The plan's fixed offset reached every child.
    assert execution.outputs["o0"] == [109, 101, 116, 101]
    # concurrency=2: never more than two children's tasks ran at once; each saw its item's index.
    assert sorted(p.name for p in markers.iterdir()) == [f"item-{i}" for i in range(4)]
    assert max_overlap(markers) <= 2

    node = execution.node_executions["n0"]
    assert node.metadata.is_array and node.closure.phase == NodeExecutionPhase.SUCCEEDED
    items = items_of(node)
    assert [(r.index, r.phase) for r in items] == [(i, TaskExecutionPhase.SUCCEEDED) for i in range(4)]
    for item in items:
        child = remote.fetch_execution(name=item.external_id)
        assert child.spec.launch_plan.name == "lp_item_plan"
        assert child.spec.metadata.parent_node_execution.execution_id.name == name
        assert child.spec.metadata.parent_node_execution.node_id == "n0"
    [array] = node.task_executions
    assert array.inputs["x"] == [3, 1, 4, 1] and array.outputs["o0"] == [109, 101, 116, 101]


def test_an_array_of_a_launch_plan_tolerates_failed_children_down_to_its_success_ratio(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "lp_map_flows.py")
    dirs = json.dumps([str(tmp_path / "markers")] * 3)
    tolerated = run_remote(server, folder, "lp_map_flows.py", "lp_map_tolerant_wf", "--xs", "[1, -2, 3]",
                           "--marker_dirs", dirs)
    too_many = run_remote(server, folder, "lp_map_flows.py", "lp_map_tolerant_wf", "--xs", "[1, -2, -3]",
                          "--marker_dirs", dirs)

    execution = finished(remote, tolerated)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == [101, None, 109]
    items = items_of(execution.node_executions["n0"])
    assert [(r.index, r.phase) for r in items] == [(0, TaskExecutionPhase.SUCCEEDED), (1, TaskExecutionPhase.FAILED),
                                                    (2, TaskExecutionPhase.SUCCEEDED)]
    failed = finished(remote, too_many)
    assert failed.closure.phase == WorkflowExecutionPhase.FAILED
    assert "2 of 3 items of array node n0 failed, and at least 2 must succeed" in failed.error.message
    assert "negative input -2" in failed.error.message
