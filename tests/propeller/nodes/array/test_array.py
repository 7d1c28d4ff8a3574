"""Array nodes (map tasks) in the engine: real flytekit map_task workflows, compiled by flytelite, whose
items run in-process; the execution persists to a real SQLite file between rounds."""

from __future__ import annotations

import asyncio

from flytelite.propeller.phases import WorkflowStatusPhase
from flytelite.store.models import FlyteWorkflow
from tests.propeller import harness as h
from tests.propeller.array_flows import (
    EnvRecordingPlugin,
    TaskPhase,
    compile_in_process,
    functions_for,
    item_resources,
    scaled,
    squares,
    squares_half_may_fail,
    squares_two_at_a_time,
)
from tests.propeller.inprocess import KEEP_RUNNING, InProcessPlugin, Recoverable, engine_for, run_engine


def test_items_run_once_each_and_outputs_keep_item_order(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)
    plugin = EnvRecordingPlugin(functions_for(names, square=lambda i, a: {"o0": i["x"] * i["x"]}))
    xs = [5, 3, 8, 1, 0, 7]
    key = h.create_execution(ctx, closure, {"xs": xs}, "squares")

    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": [x * x for x in xs]}
    assert sorted(plugin.calls) == sorted((f"n0-n{i}", 0) for i in range(len(xs)))
    # Each item's environment names its index the way flytekit's map task reads it.
    for i in range(len(xs)):
        env = plugin.envs[f"n0-n{i}"]
        assert env["FLYTE_K8S_ARRAY_INDEX"] == str(i)
        assert env["BATCH_JOB_ARRAY_INDEX_VAR_NAME"] == "FLYTE_K8S_ARRAY_INDEX"
    # The array node is reported as one node (is_array) with one task execution whose items are its
    # external resources: first all not started, finally all succeeded.
    node_events = sink.node_events("n0")
    assert any(e.is_array for e in node_events) and sink.node_phases("n0")[-1] == "SUCCEEDED"
    task_events = sink.task_events("n0")
    assert {e.retry_attempt for e in task_events} == {0}
    assert task_events[0].phase == TaskPhase["QUEUED"] and task_events[0].task_type == "container_array"
    assert [r.phase for r in task_events[0].metadata.external_resources] == [0] * len(xs)
    assert task_events[0].input_uri.endswith("/n0/data/inputs.pb")
    last = task_events[-1]
    assert last.phase == TaskPhase["SUCCEEDED"] and last.output_uri.endswith("/n0/data/0/outputs.pb")
    assert [(r.index, r.phase) for r in last.metadata.external_resources] == [(i, 3) for i in range(len(xs))]
    # Items keep their outputs under the array node's output dir.
    assert ctx.blobs.exists(f"{ctx.blobs.execution_dir(*key)}/n0/data/0/4/0/outputs.pb")


def test_partial_inputs_reach_every_item_whole(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(scaled)
    seen = []

    def fn(inputs, attempt):
        seen.append(inputs)
        return {"o0": inputs["x"] * inputs["factor"]}

    plugin = InProcessPlugin(functions_for(names, scale=fn))
    key = h.create_execution(ctx, closure, {"xs": [1, 2, 3], "factor": 10}, "scaled")

    status, _ = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": [10, 20, 30]}
    assert sorted(s["x"] for s in seen) == [1, 2, 3] and {s["factor"] for s in seen} == {10}


def test_concurrency_caps_items_running_at_once(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares_two_at_a_time)
    release = {"go": False}

    def slow(inputs, attempt):
        return {"o0": inputs["x"] * inputs["x"]} if release["go"] else KEEP_RUNNING

    plugin = InProcessPlugin(functions_for(names, square=slow))
    key = h.create_execution(ctx, closure, {"xs": list(range(6))}, "capped")

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 2)
        for _ in range(3):
            engine.notify(key)
            await asyncio.sleep(0.05)
        assert plugin.max_running == 2
        release["go"] = True

    status, _ = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert plugin.max_running == 2
    assert h.outputs(ctx, key) == {"o0": [0, 1, 4, 9, 16, 25]}


def test_without_concurrency_items_share_the_executions_max_parallelism(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)
    release = {"go": False}

    def slow(inputs, attempt):
        return {"o0": inputs["x"]} if release["go"] else KEEP_RUNNING

    plugin = InProcessPlugin(functions_for(names, square=slow))
    key = h.create_execution(ctx, closure, {"xs": list(range(7))}, "shared", max_parallelism=3)

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 3)
        for _ in range(3):
            engine.notify(key)
            await asyncio.sleep(0.05)
        release["go"] = True

    status, _ = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert plugin.max_running == 3
    assert h.outputs(ctx, key) == {"o0": list(range(7))}


def test_failed_items_give_none_when_min_success_ratio_allows(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares_half_may_fail)

    def odd_fails(inputs, attempt):
        if inputs["x"] % 2:
            raise ValueError(f"odd input {inputs['x']}")
        return {"o0": inputs["x"] * inputs["x"]}

    plugin = InProcessPlugin(functions_for(names, square=odd_fails))
    key = h.create_execution(ctx, closure, {"xs": [0, 1, 2, 3]}, "halfok")

    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    out = ctx.blobs.read_proto(f"{ctx.blobs.execution_dir(*key)}/end-node/data/0/outputs.pb",
                               __import__("flyteidl.core.literals_pb2", fromlist=["x"]).LiteralMap)
    values = out.literals["o0"].collection.literals
    assert [h.python_value(v) if not v.scalar.HasField("none_type") else None for v in values] == [0, None, 4, None]
    assert item_resources(sink) == {0: (3, 0), 1: (5, 0), 2: (3, 0), 3: (5, 0)}


def test_too_many_failures_fail_the_node_with_the_items_errors(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)

    def always_fails(inputs, attempt):
        raise ValueError(f"cannot square {inputs['x']}")

    plugin = InProcessPlugin(functions_for(names, square=always_fails))
    key = h.create_execution(ctx, closure, {"xs": [1, 2, 3]}, "allfail")

    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "ArrayNodeFailed"
    assert "at least 3 must succeed" in err.message
    assert sink.node_phases("n0")[-1] == "FAILED"
    last = sink.task_events("n0")[-1]
    assert last.phase == TaskPhase["FAILED"] and "cannot square" in last.error.message
    # Without min_success_ratio the first failure decides: the items after it never start.
    assert plugin.calls == [("n0-n0", 0)]
    assert "1 of 3 items of array node n0 failed" in err.message
    assert "[0]: ValueError: cannot square 1" in err.message
    assert item_resources(sink) == {0: (5, 0), 1: (0, 0), 2: (0, 0)}


def test_items_retry_within_their_own_budget(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)

    def flaky(inputs, attempt):
        if inputs["x"] == 2 and attempt == 0:
            raise Recoverable("try again")
        return {"o0": inputs["x"] * inputs["x"]}

    plugin = InProcessPlugin(functions_for(names, square=flaky))
    key = h.create_execution(ctx, closure, {"xs": [1, 2, 3]}, "retried")

    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": [1, 4, 9]}
    assert ("n0-n1", 1) in plugin.calls and ("n0-n0", 1) not in plugin.calls
    # The retried item's outputs are read from its second attempt's dir.
    assert ctx.blobs.exists(f"{ctx.blobs.execution_dir(*key)}/n0/data/0/1/1/outputs.pb")
    assert item_resources(sink)[1] == (3, 1)


def test_abort_stops_running_items(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares_two_at_a_time)
    plugin = InProcessPlugin(functions_for(names, square=lambda i, a: KEEP_RUNNING))
    key = h.create_execution(ctx, closure, {"xs": list(range(5))}, "aborted")

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 2)
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "terminated by a test"

    status, sink = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.ABORTED
    assert sorted(plugin.aborted) == ["n0-n0", "n0-n1"] and not plugin.running
    last = sink.task_events("n0")[-1]
    assert last.phase == TaskPhase["ABORTED"]
    phases = {r.index: r.phase for r in last.metadata.external_resources}
    assert phases == {0: 4, 1: 4, 2: 0, 3: 0, 4: 0}
    assert sink.node_phases("n0")[-1] == "ABORTED"


def test_restart_resumes_without_rerunning_finished_items(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares_two_at_a_time)
    release = {"go": False}

    def first_two_quick(inputs, attempt):
        if inputs["x"] < 2 or release["go"]:
            return {"o0": inputs["x"] * 10}
        return KEEP_RUNNING

    plugin = InProcessPlugin(functions_for(names, square=first_two_quick))
    key = h.create_execution(ctx, closure, {"xs": [0, 1, 2, 3, 4]}, "restarted")

    async def first_engine():
        engine, _ = engine_for(ctx, plugin)
        await engine.start()
        try:
            engine.notify(key)
            await h.wait_for(lambda: len(plugin.running) == 2)
        finally:
            await engine.stop()

    asyncio.run(first_engine())
    _, before = h.load(ctx, key)
    persisted = before.nodes["n0"].array
    assert persisted["items"] == "55220" and sorted(persisted["running"]) == ["2", "3"]
    calls_before = list(plugin.calls)

    release["go"] = True
    status, _ = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": [0, 10, 20, 30, 40]}
    # Only the item that had not started ran after the restart; running ones were picked up, not restarted.
    assert plugin.calls[len(calls_before):] == [("n0-n4", 0)]


def test_node_fails_as_soon_as_success_is_out_of_reach(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares_two_at_a_time)
    broken = {"item0": False}

    def item0_fails_later(inputs, attempt):
        if inputs["x"] == 0 and broken["item0"]:
            raise ValueError("item 0 is broken")
        return KEEP_RUNNING

    plugin = InProcessPlugin(functions_for(names, square=item0_fails_later))
    key = h.create_execution(ctx, closure, {"xs": [0, 1, 2, 3]}, "early")

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 2)
        broken["item0"] = True
        engine.notify(key)  # item 0 is looked at again, and fails

    status, sink = run_engine(ctx, plugin, key, during=meanwhile)

    assert status.phase == WorkflowStatusPhase.FAILED
    # Item 1 was running and is stopped (item 0's failed attempt is cleaned up too); items 2 and 3 never start.
    assert sorted(plugin.aborted) == ["n0-n0", "n0-n1"] and not plugin.running
    assert {node for node, _ in plugin.calls} == {"n0-n0", "n0-n1"}
    assert item_resources(sink) == {0: (5, 0), 1: (4, 0), 2: (0, 0), 3: (0, 0)}
    assert "1 of 4 items of array node n0 failed, and at least 4 must succeed" in h.workflow_error(sink).message
