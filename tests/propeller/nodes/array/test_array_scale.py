"""Array nodes at scale and at their edges: admin's view of the items, per-item caching, small persisted
state for many items, spaced-out progress events, success criteria."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.store.models import FlyteWorkflow, Task
from tests.propeller import harness as h
from tests.propeller.array_flows import (
    cached_squares,
    compile_in_process,
    functions_for,
    pair_sums,
    squares,
    squares_two_at_a_time,
)
from tests.propeller.inprocess import InProcessPlugin, run_engine


def test_state_stays_small_for_many_items(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)
    n = 2000
    key = h.create_execution(ctx, closure, {"xs": list(range(n))}, "many")
    late = []

    def square(inputs, attempt):
        if inputs["x"] == n - 1:  # the last item: what was persisted before it holds every other item's end
            with ctx.db.session() as s:
                late.append(s.get(FlyteWorkflow, key).status_json)
        return {"o0": inputs["x"]}

    status, sink = run_engine(ctx, InProcessPlugin(functions_for(names, square=square)), key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": list(range(n))}
    # While it runs: one character per item, and no status of a finished item left behind.
    array = json.loads(late[0])["nodes"]["n0"]["array"]
    assert len(late[0]) < 3 * n and len(array["items"]) == n
    assert array["items"].count(array["items"][0]) > n - 100 and array["running"] == {}
    # Once it is done, as in FlytePropeller, none of it is kept.
    with ctx.db.session() as s:
        persisted = s.get(FlyteWorkflow, key).status_json
    assert "array" not in json.loads(persisted)["nodes"]["n0"]
    # Far fewer task events than items: changes are batched per round.
    assert len(sink.task_events("n0")) < 10
    assert status.nodes["n0"].phase == NodeStatusPhase.SUCCEEDED


def test_min_successes_rules():
    from flyteidl.core import workflow_pb2

    from flytelite.propeller.nodes.array.handler import min_successes

    assert min_successes(workflow_pb2.ArrayNode(), 10) == 10
    assert min_successes(workflow_pb2.ArrayNode(min_successes=3), 10) == 3
    assert min_successes(workflow_pb2.ArrayNode(min_success_ratio=0.5), 5) == 3
    assert min_successes(workflow_pb2.ArrayNode(min_success_ratio=1.0), 7) == 7
    assert min_successes(workflow_pb2.ArrayNode(min_success_ratio=0.0), 7) == 0


def test_admin_lists_every_item_of_the_array_node(tmp_path):
    """What FlyteRemote reads: admin's one task execution of the array node, its items as external resources."""
    from flyteidl.admin import execution_pb2, task_execution_pb2
    from flyteidl.core import identifier_pb2

    from tests.propeller import admin_engine as ae

    admin = ae.make_admin(tmp_path)
    admin.register(squares_two_at_a_time)
    with admin.ctx.db.session() as s:
        names = [name.rsplit(".", 1)[-1] for (name,) in s.execute(select(Task.name)).all()]
    plugin = ae.PythonTasksInProcess(functions_for(names, square=lambda i, a: {"o0": i["x"] + 1}))
    n = 40
    lp = identifier_pb2.Identifier(resource_type=identifier_pb2.LAUNCH_PLAN, project=h.P, domain=h.D,
                                   name="tests.propeller.array_flows.squares_two_at_a_time", version="v1")
    exec_id = admin.svc.CreateExecution(execution_pb2.ExecutionCreateRequest(
        project=h.P, domain=h.D, spec=execution_pb2.ExecutionSpec(launch_plan=lp),
        inputs=h.literal_map({"xs": list(range(n))}))).id

    async def body(engine):
        await ae.wait_done(admin, exec_id)

    ae.run_with_engine(admin, body, plugin)
    try:
        nodes = ae.nodes_of(admin, exec_id)
        assert nodes["n0"].metadata.is_array and nodes["n0"].closure.phase == 3
        listed = admin.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
            node_execution_id=identifier_pb2.NodeExecutionIdentifier(node_id="n0", execution_id=exec_id), limit=10))
        [task_execution] = listed.task_executions
        assert task_execution.id.retry_attempt == 0 and task_execution.closure.phase == 3
        assert task_execution.closure.output_uri.endswith("/n0/data/0/outputs.pb")
        items = task_execution.closure.metadata.external_resources
        assert [(r.index, r.phase, r.retry_attempt) for r in items] == [(i, 3, 0) for i in range(n)]
        assert all(r.external_id for r in items)
    finally:
        admin.close()


def test_items_are_cached_one_by_one(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(cached_squares)
    plugin = InProcessPlugin(functions_for(names, cached_square=lambda i, a: {"o0": i["x"] * i["x"]}))
    first = h.create_execution(ctx, closure, {"xs": [1, 2, 3]}, "cachedfirst")
    status, _ = run_engine(ctx, plugin, first)
    assert status.phase == WorkflowStatusPhase.SUCCESS and len(plugin.calls) == 3

    # Items 0 and 1 have inputs computed before (in other positions): only item 2 runs.
    second = h.create_execution(ctx, closure, {"xs": [3, 2, 5]}, "cachedsecond")
    status, sink = run_engine(ctx, plugin, second)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, second) == {"o0": [9, 4, 25]}
    assert plugin.calls[3:] == [("n0-n2", 0)]
    last = sink.task_events("n0")[-1]
    cache = {r.index: r.cache_status for r in last.metadata.external_resources}
    assert cache[0] == cache[1] == 2  # CACHE_HIT
    assert cache[2] == 3  # CACHE_POPULATED


def test_held_progress_keeps_each_items_latest_phase_and_its_logs():
    from flyteidl.core import execution_pb2
    from flyteidl.event import event_pb2

    from flytelite.propeller.nodes.array import progress
    from flytelite.propeller.nodes.array.state import ArrayState

    state = ArrayState.start(500)
    running = event_pb2.ExternalResourceInfo(index=7, retry_attempt=0, phase=2, external_id="x_n0_n7_0",
                                             logs=[execution_pb2.TaskLog(uri="http://log/7", name="log-7")])
    progress.hold(state, [running])
    progress.hold(state, [event_pb2.ExternalResourceInfo(index=7, retry_attempt=0, phase=3),
                          event_pb2.ExternalResourceInfo(index=2, retry_attempt=1, phase=2)])
    state = ArrayState.from_dict(state.to_dict())  # pending survives a restart
    released = progress.release(state)
    assert [(r.index, r.retry_attempt, r.phase) for r in released] == [(2, 1, 2), (7, 0, 3)]
    assert released[1].external_id == "x_n0_n7_0" and released[1].logs[0].uri == "http://log/7"
    assert not state.pending
    # A large array waits between progress events; a small one does not.
    state.reported_at = 100.0
    assert progress.seconds_until_due(state, 100.4) == pytest.approx(0.6)
    assert progress.seconds_until_due(ArrayState.start(10), 100.4) == 0


def test_an_empty_list_gives_empty_outputs(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(squares)
    plugin = InProcessPlugin(functions_for(names, square=lambda i, a: {"o0": i["x"]}))
    key = h.create_execution(ctx, closure, {"xs": []}, "empty")

    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": []}
    assert plugin.calls == []
    assert [e.phase for e in sink.task_events("n0")] == [1, 3]  # QUEUED, SUCCEEDED


def test_lists_of_different_lengths_fail_the_node(tmp_path):
    ctx = h.make_context(tmp_path)
    closure, names = compile_in_process(pair_sums)
    plugin = InProcessPlugin(functions_for(names, pair_sum=lambda i, a: {"o0": i["a"] + i["b"]}))
    ok = h.create_execution(ctx, closure, {"xs": [1, 2], "ys": [10, 20]}, "pairs")
    status, _ = run_engine(ctx, plugin, ok)
    assert status.phase == WorkflowStatusPhase.SUCCESS and h.outputs(ctx, ok) == {"o0": [11, 22]}

    bad = h.create_execution(ctx, closure, {"xs": [1, 2, 3], "ys": [10, 20]}, "badpairs")
    status, sink = run_engine(ctx, plugin, bad)
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "InvalidArrayLength" and "input arrays have different lengths" in err.message
