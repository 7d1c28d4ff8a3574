"""The engine on small compiled workflows whose tasks run in-process, persisted to a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import os

import msgpack
import pytest
from flyteidl.core import literals_pb2

from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.store.models import FlyteWorkflow
from tests.propeller import dag_workflows as dw
from tests.propeller import harness as h
from tests.propeller.inprocess import (
    KEEP_RUNNING,
    InProcessPlugin,
    Recoverable,
    SystemLost,
    engine_for,
    registry,
    run_engine,
)

IN_PROCESS = {n: "in-process" for n in ("inc", "total", "slow", "retried", "make_pair")}


def test_fan_out_runs_nodes_in_parallel_and_writes_workflow_outputs(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"inc": lambda i, a: {"o0": i["x"] + 1},
                              "total": lambda i, a: {"o0": i["a"] + i["b"] + i["c"]}})
    key = h.create_execution(ctx, h.compile_entity(dw.fan_out, IN_PROCESS), {"x": 1}, "fanout")

    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 6}
    # The three independent nodes were all queued before the node that needs them ran.
    order = [e.id.node_id for e in sink.events if e.DESCRIPTOR.name == "NodeExecutionEvent" and e.phase == 1]
    assert order[:3] == ["n0", "n1", "n2"] and order[3] == "n3"
    assert sink.workflow_phases() == ["RUNNING", "SUCCEEDING", "SUCCEEDED"]
    assert sink.node_phases("start-node") == ["SUCCEEDED"]
    # An in-process task finishes on its first look: the node goes from QUEUED straight to SUCCEEDED.
    assert sink.node_phases("n0") == ["QUEUED", "SUCCEEDED"]
    succeeded = sink.node_events("n3")[-1]
    assert succeeded.output_uri.endswith("/n3/data/0/outputs.pb")
    assert succeeded.input_uri.endswith("/n3/data/inputs.pb")
    assert succeeded.spec_node_id == "n3" and succeeded.target_entity.name.endswith("total")
    assert succeeded.producer_id == "flytelite"
    wf_done = [e for e in sink.events if e.DESCRIPTOR.name == "WorkflowExecutionEvent"][-1]
    assert wf_done.output_uri == f"{ctx.blobs.execution_dir(*key)}/end-node/data/0/outputs.pb"
    inputs = ctx.blobs.read_proto(f"{ctx.blobs.execution_dir(*key)}/n3/data/inputs.pb", literals_pb2.LiteralMap)
    assert {k: h.python_value(v) for k, v in inputs.literals.items()} == {"a": 2, "b": 2, "c": 2}
    # Everything the engine knows is in the database row.
    with ctx.db.session() as s:
        row = s.get(FlyteWorkflow, key)
        persisted = json.loads(row.status_json)
    assert row.done is True
    assert {n: v["phase"] for n, v in persisted["nodes"].items()} == {
        "start-node": 5, "n0": 5, "n1": 5, "n2": 5, "n3": 5, "end-node": 5}


def test_user_error_fails_workflow_with_the_node_message(tmp_path):
    ctx = h.make_context(tmp_path)

    def slow(inputs, attempt):
        raise ValueError("the input was bad")

    plugin = InProcessPlugin({"inc": lambda i, a: {"o0": i["x"] + 1}, "slow": slow})
    key = h.create_execution(ctx, h.compile_entity(dw.chain_with_failure, IN_PROCESS), {"x": 1}, "fails")

    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert status.nodes["n1"].phase == NodeStatusPhase.FAILED
    assert "n2" not in status.nodes or status.nodes["n2"].phase == NodeStatusPhase.NOT_YET_STARTED
    assert sink.workflow_phases() == ["RUNNING", "FAILING", "FAILED"]
    err = h.workflow_error(sink)
    assert err.message == "ValueError: the input was bad" and err.kind == 1
    assert sink.node_phases("n1") == ["QUEUED", "FAILED"]
    assert sink.task_phases("n1") == [(0, "FAILED")]


def test_retries_user_and_system_errors_within_their_budgets(tmp_path):
    ctx = h.make_context(tmp_path, max_system_retries=1)

    def retried(inputs, attempt):
        # attempt 0: recoverable user error; 1: lost process (system); 2: recoverable; 3: success
        if attempt in (0, 2):
            raise Recoverable(f"try again ({attempt})")
        if attempt == 1:
            raise SystemLost("process vanished")
        return {"o0": attempt}

    plugin = InProcessPlugin({"retried": retried})
    key = h.create_execution(ctx, h.compile_entity(dw.retry_wf, IN_PROCESS), {"x": 1}, "retries")

    status, sink = run_engine(ctx, plugin, key)
    # retries=2 gives 3 user attempts; the system error did not use them up.
    assert status.phase == WorkflowStatusPhase.SUCCESS, status
    assert h.outputs(ctx, key) == {"o0": 3}
    node = status.nodes["n0"]
    assert (node.attempts, node.system_failures) == (3, 1)
    assert sink.task_phases("n0") == [(0, "FAILED"), (1, "FAILED"), (2, "FAILED"), (3, "SUCCEEDED")]
    # Retries do not show up as node phase changes (the node stays RUNNING for admin).
    assert sink.node_phases("n0") == ["QUEUED", "SUCCEEDED"]
    assert [n for n, _ in plugin.calls] == ["n0"] * 4


def test_retries_exhausted_reports_the_last_error(tmp_path):
    ctx = h.make_context(tmp_path)

    def retried(inputs, attempt):
        raise Recoverable(f"still broken on attempt {attempt}")

    key = h.create_execution(ctx, h.compile_entity(dw.retry_wf, IN_PROCESS), {"x": 1}, "exhausted")

    status, sink = run_engine(ctx, InProcessPlugin({"retried": retried}), key)
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "RetriesExhausted|Recoverable"
    assert err.message == "[3/3] currentAttempt done. Last Error: USER::still broken on attempt 2"
    # As in FlytePropeller, a done node keeps its phase, attempts, error, stop time and data folders, and drops
    # what it needed only while it ran.
    node = status.nodes["n0"]
    assert (node.phase, node.attempts, node.error.code) == (NodeStatusPhase.FAILED, 2, err.code)
    assert node.stopped_at and node.output_dir.endswith("/n0/data/2")
    assert (node.task, node.queued_at, node.started_at, node.last_attempt_started_at) == (None, None, None, None)


def test_max_parallelism_caps_running_task_nodes(tmp_path):
    ctx = h.make_context(tmp_path)
    release = {"go": False}

    def slow(inputs, attempt):
        return {"o0": inputs["x"]} if release["go"] else KEEP_RUNNING

    plugin = InProcessPlugin({"slow": slow})
    key = h.create_execution(ctx, h.compile_entity(dw.five_slow, IN_PROCESS), {"x": 7}, "capped", max_parallelism=2)

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 2)
        await asyncio.sleep(0.3)
        for _ in range(3):
            engine.notify(key)
            await asyncio.sleep(0.05)
        assert plugin.max_running == 2
        # The nodes waiting for room were never started: nothing of theirs is in the status.
        _, persisted = h.load(ctx, key)
        assert sorted(n for n in persisted.nodes if n not in ("start-node", "end-node")) == ["n0", "n1"]
        release["go"] = True

    status, _ = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert plugin.max_running == 2
    assert h.outputs(ctx, key) == {"o0": [7, 7, 7, 7, 7]}


def test_a_running_node_has_the_data_folders_of_the_nodes_after_it_made(tmp_path):
    """Made while it runs, not when the successor starts (between two tasks); its inputs come only then."""
    ctx = h.make_context(tmp_path)
    release = {"go": False}
    plugin = InProcessPlugin({"inc": lambda i, a: {"o0": i["x"] + 1} if release["go"] else KEEP_RUNNING,
                              "total": lambda i, a: {"o0": i["a"] + i["b"] + i["c"]}})
    key = h.create_execution(ctx, h.compile_entity(dw.fan_out, IN_PROCESS), {"x": 1}, "ahead")
    execution_dir = ctx.blobs.local_file(ctx.blobs.execution_dir(*key))

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 3)
        assert os.path.isdir(f"{execution_dir}/n3/data")
        assert not os.path.exists(f"{execution_dir}/n3/data/inputs.pb")
        assert not os.path.exists(f"{execution_dir}/end-node")
        release["go"] = True
        engine.notify(key)

    status, _ = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 6}


def test_abort_stops_running_nodes_and_reports_aborted(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"slow": lambda i, a: KEEP_RUNNING})
    key = h.create_execution(ctx, h.compile_entity(dw.five_slow, IN_PROCESS), {"x": 1}, "aborted")

    async def meanwhile(engine):
        await h.wait_for(lambda: len(plugin.running) == 5)
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "terminated by a test"

    status, sink = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.ABORTED
    assert sorted(plugin.aborted) == ["n0", "n1", "n2", "n3", "n4"]
    assert sink.workflow_phases()[-1] == "ABORTED"
    assert sink.node_phases("n0")[-1] == "ABORTED"
    assert sink.task_phases("n0")[-1] == (0, "ABORTED")
    assert sink.node_events("n0")[-1].error.message == "terminated by a test"


def test_attribute_path_into_a_dataclass_output(tmp_path):
    ctx = h.make_context(tmp_path)
    pair = literals_pb2.Literal(scalar=literals_pb2.Scalar(binary=literals_pb2.Binary(
        value=msgpack.packb({"left": 1, "right": 41}), tag="msgpack")))
    plugin = InProcessPlugin({"make_pair": lambda i, a: {"o0": pair}, "inc": lambda i, a: {"o0": i["x"] + 1}})
    key = h.create_execution(ctx, h.compile_entity(dw.attr_wf, IN_PROCESS), {"x": 1}, "attr")

    status, _ = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 42}


@pytest.mark.parametrize("task_type", ["spark", "container_array"])
def test_unknown_task_type_fails_naming_the_type(tmp_path, task_type):
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(dw.retry_wf, {"retried": task_type}), {"x": 1}, "unknown")

    status, sink = run_engine(ctx, InProcessPlugin({}), key)
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "UnsupportedTaskType" and repr(task_type) in err.message


def test_node_kind_not_built_yet_fails_the_node_clearly(tmp_path):
    from flytekit import conditional, workflow

    @workflow
    def branchy(x: int) -> int:
        return conditional("c").if_(x > 0).then(dw.inc(x=x)).else_().then(dw.slow(x=x))

    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(branchy, IN_PROCESS), {"x": 1}, "branchy")

    async def go():
        from flytelite.propeller.nodes.end.handler import EndHandler
        from flytelite.propeller.nodes.registry import HandlerRegistry
        from flytelite.propeller.nodes.start.handler import StartHandler
        from flytelite.propeller.nodes.task.handler import TaskHandler

        # An engine built without the branch handler stands for any kind flytelite does not run.
        plugins = registry(InProcessPlugin({}))
        sink = h.RecordingSink()
        engine = Engine(ctx, sink, plugins=plugins,
                        handlers=HandlerRegistry([StartHandler(), EndHandler(), TaskHandler(plugins)]))
        await engine.start()
        try:
            return await h.run_to_completion(engine, ctx, key), sink
        finally:
            await engine.stop()

    status, sink = asyncio.run(go())
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "NodeKindNotSupported" and "does not run branch nodes yet" in err.message


def test_fail_after_executable_nodes_complete_lets_running_nodes_finish(tmp_path):
    ctx = h.make_context(tmp_path)
    release = {"go": False}

    def inc(inputs, attempt):
        raise ValueError("inc is broken")

    def slow(inputs, attempt):
        return {"o0": inputs["x"]} if release["go"] else KEEP_RUNNING

    plugin = InProcessPlugin({"inc": inc, "slow": slow})
    key = h.create_execution(ctx, h.compile_entity(dw.keep_going, IN_PROCESS), {"x": 1}, "keepgoing")

    async def meanwhile(engine):
        await h.wait_for(lambda: h.load(ctx, key)[1].nodes.get("n0") and
                         h.load(ctx, key)[1].nodes["n0"].phase == NodeStatusPhase.FAILED)
        await asyncio.sleep(0.2)
        assert h.load(ctx, key)[1].phase == WorkflowStatusPhase.RUNNING  # n1 is still running
        release["go"] = True

    status, sink = run_engine(ctx, plugin, key, during=meanwhile)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert status.nodes["n1"].phase == NodeStatusPhase.SUCCEEDED
    assert "inc is broken" in h.workflow_error(sink).message


def test_rounds_that_keep_raising_fail_the_execution_as_a_system_error(tmp_path):
    ctx = h.make_context(tmp_path)

    def broken(inputs, attempt):
        raise RuntimeError("plugin bug")

    plugin = InProcessPlugin({})
    plugin.handle = lambda tctx: broken(None, 0)  # an engine-side bug, not a task failure
    key = h.create_execution(ctx, h.compile_entity(dw.retry_wf, IN_PROCESS), {"x": 1}, "enginebug")
    engine, sink = engine_for(ctx, plugin)
    with pytest.raises(RuntimeError, match="plugin bug"):
        engine.executor.handle(key)
    # The failed round left the persisted status as it was before it.
    assert h.load(ctx, key)[1].nodes == {}
    results = [engine.executor.record_failed_round(key, RuntimeError("plugin bug")) for _ in range(10)]
    assert results == [False] * 9 + [True]
    row, status = h.load(ctx, key)
    assert row.done and status.phase == WorkflowStatusPhase.FAILED and status.error.code == "EngineError"
    assert "plugin bug" in h.workflow_error(sink).message
