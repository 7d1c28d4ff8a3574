"""Task caching end to end: real pyflyte and FlyteRemote, a real server, real task processes.

Each task writes a marker file when it really runs and returns a token unique to that run, so a
cache hit is proven by no new marker (no process ran), no task execution on the node, and the
token of the run that computed the value.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from flyteidl.core import catalog_pb2
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import config_args_for
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=120)
HIT, POPULATED = catalog_pb2.CACHE_HIT, catalog_pb2.CACHE_POPULATED


def finished(remote, name: str):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    return remote.sync_execution(execution, sync_nodes=True)


def markers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def cache_cli(server, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "flytelite.cli", "cache", *args, "--home", str(server.home),
                           *config_args_for(server.home)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_second_run_hits_without_a_process_and_keys_follow_cache_version(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_basic.py")

    def run(marker: str):
        name = run_remote(server, folder, "cache_basic.py", "cache_basic_wf", "--x", "3",
                          "--marker_dir", str(tmp_path / marker))
        execution = finished(remote, name)
        return execution, execution.node_executions["n0"]

    first, first_node = run("m1")
    assert len(markers(tmp_path / "m1")) == 1
    token = markers(tmp_path / "m1")[0]
    assert first.outputs["o0"] == f"9:{token}"
    assert first_node.closure.task_node_metadata.cache_status == POPULATED
    assert len(first_node.task_executions) == 1

    # Same counted input (marker_dir is ignored by the key): a hit, and no process ran.
    second, node = run("m2")
    assert markers(tmp_path / "m2") == []
    assert second.outputs["o0"] == f"9:{token}"
    meta = node.closure.task_node_metadata
    assert meta.cache_status == HIT
    assert meta.catalog_key.dataset_id.name == "flyte_task-cache_basic.cache_square"
    assert meta.catalog_key.source_task_execution.node_execution_id.execution_id.name == first.id.name
    assert node.task_executions == []
    assert node.outputs["o0"] == f"9:{token}"

    # Re-registered code (a new version, same cache_version) keeps its hits.
    with open(folder / "cache_basic.py", "a") as f:
        f.write("\n# revision 2: same task, new code version\n")
    third, node = run("m3")
    assert third.spec.launch_plan.version != first.spec.launch_plan.version
    assert node.closure.task_node_metadata.cache_status == HIT and markers(tmp_path / "m3") == []
    assert third.outputs["o0"] == f"9:{token}"

    # A new cache_version misses and runs.
    source = (folder / "cache_basic.py").read_text()
    (folder / "cache_basic.py").write_text(source.replace('cache_version="1"', 'cache_version="2"'))
    fourth, node = run("m4")
    assert node.closure.task_node_metadata.cache_status == POPULATED
    assert len(markers(tmp_path / "m4")) == 1
    assert fourth.outputs["o0"] == f"9:{markers(tmp_path / 'm4')[0]}"


def test_overwrite_cache_reruns_and_cli_lists_and_clears(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_overwrite.py")
    name = run_remote(server, folder, "cache_overwrite.py", "cache_overwrite_wf", "--x", "2",
                      "--marker_dir", str(tmp_path / "m1"))
    first = finished(remote, name)
    assert len(markers(tmp_path / "m1")) == 1
    lp = remote.fetch_launch_plan(name=first.spec.launch_plan.name, version=first.spec.launch_plan.version)

    def execute(marker: str, **kw):
        execution = remote.execute(lp, inputs={"x": 2, "marker_dir": str(tmp_path / marker)}, **kw)
        execution = finished(remote, execution.id.name)
        return execution, execution.node_executions["n0"]

    overwritten, node = execute("m2", overwrite_cache=True)
    assert len(markers(tmp_path / "m2")) == 1, "overwrite_cache must run the task again"
    assert node.closure.task_node_metadata.cache_status == POPULATED
    token = markers(tmp_path / "m2")[0]
    assert overwritten.outputs["o0"] == f"8:{token}"
    after, node = execute("m3")
    assert node.closure.task_node_metadata.cache_status == HIT and markers(tmp_path / "m3") == []
    assert after.outputs["o0"] == f"8:{token}", "the overwrite replaced the cached value"

    listed = cache_cli(server, "list", "--task", "cache_overwrite.cache_cube")
    rows = [line for line in listed.splitlines() if line.startswith("flytesnacks")]
    assert len(rows) == 1 and f"{overwritten.id.name}/n0" in rows[0] and "cache_overwrite.cache_cube" in rows[0]
    assert listed.splitlines()[-1] == "1 cached entry"
    assert cache_cli(server, "clear", "--task", "cache_overwrite.cache_cube").strip() == \
        "cleared 1 cached entry of task cache_overwrite.cache_cube"
    cleared, node = execute("m4")
    assert node.closure.task_node_metadata.cache_status == POPULATED and len(markers(tmp_path / "m4")) == 1


def test_concurrent_serialized_executions_compute_once(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_serial.py")
    marker_dir = tmp_path / "markers"
    first_name = run_remote(server, folder, "cache_serial.py", "cache_serial_wf", "--x", "7",
                            "--marker_dir", str(marker_dir))
    spec = remote.fetch_execution(name=first_name).spec.launch_plan
    lp = remote.fetch_launch_plan(name=spec.name, version=spec.version)
    second_name = remote.execute(lp, inputs={"x": 7, "marker_dir": str(marker_dir)}).id.name
    first, second = finished(remote, first_name), finished(remote, second_name)

    assert len(markers(marker_dir)) == 1, "two serialized executions both ran the task"
    assert first.outputs["o0"] == second.outputs["o0"] == f"49:{markers(marker_dir)[0]}"
    owner, waiter = first.node_executions["n0"], second.node_executions["n0"]
    assert owner.closure.task_node_metadata.cache_status == POPULATED and len(owner.task_executions) == 1
    assert waiter.closure.task_node_metadata.cache_status == HIT and waiter.task_executions == []
    # The waiter was queued while the owner still ran: it waited on the reservation, not on luck.
    assert waiter.closure.created_at < owner.closure.updated_at


def test_map_task_items_are_cached_one_by_one(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_map.py")

    def run(xs: str, marker: str):
        name = run_remote(server, folder, "cache_map.py", "cache_map_wf", "--xs", xs,
                          "--marker_dir", str(tmp_path / marker))
        execution = finished(remote, name)
        [task_execution] = execution.node_executions["n0"].task_executions
        return execution, list(task_execution.closure.metadata.external_resources)

    first, items = run("[1, 2, 3]", "m1")
    tokens = {name.split("-")[0]: name.split("-")[1] for name in markers(tmp_path / "m1")}
    assert sorted(tokens) == ["1", "2", "3"]
    assert [r.cache_status for r in items] == [POPULATED] * 3
    # Items 2 and 3 were computed before (in other positions): only 4 runs.
    second, items = run("[2, 3, 4]", "m2")
    assert [m.split("-")[0] for m in markers(tmp_path / "m2")] == ["4"]
    assert second.outputs["o0"][:2] == [f"4:{tokens['2']}", f"9:{tokens['3']}"]
    assert second.outputs["o0"][2].startswith("16:")
    assert [(r.index, r.cache_status) for r in items] == [(0, HIT), (1, HIT), (2, POPULATED)]


def test_children_of_a_dynamic_workflow_are_cached(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_dynamic.py")

    def run(n: int, marker: str):
        name = run_remote(server, folder, "cache_dynamic.py", "cache_dynamic_wf", "--n", str(n),
                          "--marker_dir", str(tmp_path / marker))
        execution = finished(remote, name)
        children = execution.node_executions["n0"].subworkflow_node_executions
        return execution, {k: v for k, v in children.items() if "start-node" not in k and "end-node" not in k}

    first, children = run(2, "m1")
    assert len(markers(tmp_path / "m1")) == 2
    assert sorted(c.closure.task_node_metadata.cache_status for c in children.values()) == [POPULATED] * 2
    second, children = run(3, "m2")
    assert [m.split("-")[1] for m in markers(tmp_path / "m2")] == ["2"]
    assert second.outputs["o0"][:2] == first.outputs["o0"]
    statuses = sorted((c.metadata.spec_node_id, c.closure.task_node_metadata.cache_status) for c in children.values())
    assert statuses == [("dn0", HIT), ("dn1", HIT), ("dn2", POPULATED)]
    hits = [c for c in children.values() if c.closure.task_node_metadata.cache_status == HIT]
    assert all(c.task_executions == [] for c in hits)


def test_a_cached_dynamic_task_caches_what_its_workflow_produced(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "cache_dynamic.py")

    def run(marker: str):
        name = run_remote(server, folder, "cache_dynamic.py", "cache_dynamic_cached_wf", "--n", "5",
                          "--marker_dir", str(tmp_path / marker))
        execution = finished(remote, name)
        return execution, execution.node_executions["n0"]

    first, node = run("m1")
    assert first.closure.phase == WorkflowExecutionPhase.SUCCEEDED
    assert len([m for m in markers(tmp_path / "m1") if m.startswith("parent-")]) == 1
    assert node.closure.task_node_metadata.cache_status == POPULATED
    second, node = run("m2")
    # A hit: neither the dynamic task nor any child ran, and the node has no children or task attempts.
    assert markers(tmp_path / "m2") == []
    assert node.closure.task_node_metadata.cache_status == HIT
    assert second.outputs["o0"] == first.outputs["o0"] and len(second.outputs["o0"]) == 5
    assert node.task_executions == [] and not node.metadata.is_parent_node
