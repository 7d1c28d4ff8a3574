"""Workflow failure nodes (`on_failure`) and timeouts in the engine, with tasks run in-process on a real store."""

from __future__ import annotations

from datetime import timedelta

from flyteidl.core import types_pb2
from flytekit import task, workflow
from flytekit.types.error import FlyteError

from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.store.models import FlyteWorkflow
from tests.propeller import harness as h
from tests.propeller.inprocess import KEEP_RUNNING, InProcessPlugin, run_engine


@task
def fh_step(x: int) -> int:
    return x


@task
def fh_cleanup(x: int, err: FlyteError | None = None) -> None:
    return None


@task(timeout=timedelta(seconds=1), retries=1)
def fh_hangs(x: int) -> int:
    return x


@workflow(on_failure=fh_cleanup)
def fh_wf(x: int) -> int:
    return fh_step(x=fh_step(x=x))


@workflow
def fh_timeout_wf(x: int) -> int:
    return fh_hangs(x=x)


IN_PROCESS = {n: "in-process" for n in ("fh_step", "fh_cleanup", "fh_hangs")}


def failing_step(inputs, attempt):
    if inputs["x"] == 3:
        raise ValueError("step saw 3")
    return {"o0": inputs["x"] + 1}


def test_failure_node_runs_with_the_workflow_inputs_and_error_then_the_workflow_fails(tmp_path):
    ctx = h.make_context(tmp_path)
    seen = {}

    def cleanup(inputs, attempt):
        seen.update(inputs)
        return {}

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": cleanup})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 2}, "onfailure")
    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.FAILED
    # The original error, not the failure node's outcome.
    err = h.workflow_error(sink)
    assert err.message == "ValueError: step saw 3" and err.kind == 1
    assert status.nodes["fn0"].phase == NodeStatusPhase.SUCCEEDED
    assert seen["x"] == 2
    union = seen["err"].scalar.union
    assert union.type.structure.tag == "FlyteError"
    assert union.value.scalar.error == types_pb2.Error(message="ValueError: step saw 3", failed_node_id="fn0")
    # Admin sees FAILING while the failure node runs (Flyte's API has no HandlingFailureNode phase).
    assert sink.workflow_phases()[0] == "RUNNING" and sink.workflow_phases()[-1] == "FAILED"
    assert set(sink.workflow_phases()[1:-1]) == {"FAILING"}
    assert sink.node_phases("fn0") == ["QUEUED", "SUCCEEDED"]
    assert sink.node_events("fn0")[0].input_uri.endswith("/fn0/data/inputs.pb")


def test_workflow_waits_in_handling_failure_node_until_the_failure_node_is_done(tmp_path):
    ctx = h.make_context(tmp_path)
    release = {"go": False}

    def cleanup(inputs, attempt):
        return {} if release["go"] else KEEP_RUNNING

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": cleanup})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 3}, "handling")

    async def during(engine):
        await h.wait_for(lambda: "fn0" in plugin.running)
        assert h.load(ctx, key)[1].phase == WorkflowStatusPhase.HANDLING_FAILURE_NODE
        release["go"] = True
        engine.notify(key)

    status, sink = run_engine(ctx, plugin, key, during=during)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert h.workflow_error(sink).message == "ValueError: step saw 3"
    # The node after the failed one never ran.
    assert [n for n, _ in plugin.calls] == ["n0", "fn0"]


def test_a_failing_failure_node_fails_the_workflow_with_its_own_error(tmp_path):
    ctx = h.make_context(tmp_path)

    def cleanup(inputs, attempt):
        raise RuntimeError("cleanup broke too")

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": cleanup})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 3}, "cleanupfails")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert status.nodes["fn0"].phase == NodeStatusPhase.FAILED
    assert h.workflow_error(sink).message == "RuntimeError: cleanup broke too"


def test_a_succeeding_workflow_never_runs_its_failure_node(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": lambda i, a: {}})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 5}, "nofailure")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 7}
    assert "fn0" not in status.nodes
    assert sink.node_events("fn0") == []


def test_terminating_while_the_failure_node_runs_aborts_it(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": lambda i, a: KEEP_RUNNING})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 3}, "abortcleanup")

    async def during(engine):
        await h.wait_for(lambda: "fn0" in plugin.running)
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "stop the cleanup"
        engine.notify(key)

    status, sink = run_engine(ctx, plugin, key, during=during)
    assert status.phase == WorkflowStatusPhase.ABORTED
    assert plugin.aborted.count("fn0") == 1 and plugin.aborted[-1] == "fn0"
    assert sink.node_phases("fn0")[-1] == "ABORTED"


def test_task_timeout_kills_each_attempt_and_the_node_times_out(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_hangs": lambda i, a: KEEP_RUNNING})
    key = h.create_execution(ctx, h.compile_entity(fh_timeout_wf, IN_PROCESS), {"x": 1}, "timesout")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.FAILED
    node = status.nodes["n0"]
    # retries=1: the first timed-out attempt is retried, the second times the node out.
    assert node.phase == NodeStatusPhase.TIMED_OUT and node.attempts == 1
    assert plugin.calls == [("n0", 0), ("n0", 1)]
    # Both attempts were stopped (abort may be called more than once per attempt; it is idempotent).
    assert plugin.running == set() and "n0" in plugin.aborted
    assert sink.task_phases("n0") == [(0, "RUNNING"), (0, "ABORTED"), (1, "RUNNING"), (1, "ABORTED")]
    assert sink.node_phases("n0")[-1] == "TIMED_OUT"
    err = h.workflow_error(sink)
    assert err.code == "TimeoutExpired" and err.message == "task execution timeout [1s] expired"


@workflow
def fh_cleanup_wf(x: int, err: FlyteError | None = None) -> None:
    fh_cleanup(x=x, err=err)


@workflow(on_failure=fh_cleanup_wf)
def fh_wf_with_cleanup_workflow(x: int) -> int:
    return fh_step(x=x)


def test_a_failure_workflow_runs_as_a_subworkflow_with_the_error(tmp_path):
    ctx = h.make_context(tmp_path)
    seen = {}

    def cleanup(inputs, attempt):
        seen.update(inputs)
        return {}

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": cleanup})
    key = h.create_execution(ctx, h.compile_entity(fh_wf_with_cleanup_workflow, IN_PROCESS), {"x": 3}, "cleanupwf")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert h.workflow_error(sink).message == "ValueError: step saw 3"
    assert status.nodes["fn0"].phase == NodeStatusPhase.SUCCEEDED
    assert seen["x"] == 3
    assert seen["err"].scalar.union.value.scalar.error.message == "ValueError: step saw 3"


# -- a subworkflow's own failure node (FlytePropeller's HandleFailingSubWorkflow) ----------------
@task
def fh_sibling(x: int) -> int:
    return x


@workflow(on_failure=fh_cleanup)
def fh_sub_with_cleanup(x: int) -> int:
    fh_sibling(x=x)
    return fh_step(x=x)


@workflow(on_failure=fh_cleanup)
def fh_parent_of_failing_sub(x: int) -> int:
    # n0 turns 2 into 3, which the subworkflow n1's own step (n1-0-n1) refuses.
    return fh_sub_with_cleanup(x=fh_step(x=x))


SUB_IN_PROCESS = {**IN_PROCESS, "fh_sibling": "in-process"}


def _event_index(sink, node_id: str, phase: str) -> int:
    return next(i for i, e in enumerate(sink.events) if e.DESCRIPTOR.name == "NodeExecutionEvent"
                and e.id.node_id == node_id and h.node_phase_name(e.phase) == phase)


def test_a_failing_subworkflow_runs_its_own_failure_node_then_the_parent_runs_its_own(tmp_path):
    ctx = h.make_context(tmp_path)
    cleanups = {}

    def cleanup(inputs, attempt):
        cleanups[inputs["x"]] = inputs["err"].scalar.union.value.scalar.error
        return {}

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_sibling": lambda i, a: KEEP_RUNNING, "fh_cleanup": cleanup})
    closure = h.compile_entity(fh_parent_of_failing_sub, SUB_IN_PROCESS)
    key = h.create_execution(ctx, closure, {"x": 2}, "subonfailure")
    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.FAILED
    assert h.workflow_error(sink).message == "ValueError: step saw 3"
    # The subworkflow's failure node ran first, with the subworkflow's inputs and error; then the parent's.
    cleanup_calls = [n for n, _ in plugin.calls if n.endswith("fn0")]
    assert cleanup_calls == ["n1-0-fn0", "fn0"]
    error = types_pb2.Error(message="ValueError: step saw 3", failed_node_id="fn0")
    assert cleanups == {3: error, 2: error}
    # The subworkflow's running sibling was aborted, once, before its failure node started.
    assert plugin.aborted.count("n1-0-n0") == 1
    assert sink.node_phases("n1-0-n0")[-1] == "ABORTED" and sink.node_phases("n1-0-n0").count("ABORTED") == 1
    assert _event_index(sink, "n1-0-n0", "ABORTED") < _event_index(sink, "n1-0-fn0", "QUEUED")
    # The failure node is a child of the subworkflow node: its id, parent and data derive from it.
    first = sink.node_events("n1-0-fn0")[0]
    assert first.spec_node_id == "fn0" and first.parent_node_metadata.node_id == "n1" and first.retry_group == "0"
    assert first.input_uri.endswith("/n1/data/0/fn0/inputs.pb")
    assert sink.node_phases("n1-0-fn0")[0] == "QUEUED" and sink.node_phases("n1-0-fn0")[-1] == "SUCCEEDED"
    # As in FlytePropeller, a done node keeps no status of its children.
    assert status.nodes["n1"].sub_nodes == {}
    # The subworkflow node ran until its failure node was done, then failed with the subworkflow's error.
    assert sink.node_phases("n1") == ["QUEUED", "RUNNING", "FAILED"]
    assert sink.node_events("n1")[-1].error.message == "ValueError: step saw 3"
    assert status.nodes["n1"].phase == NodeStatusPhase.FAILED
    assert _event_index(sink, "n1-0-fn0", "SUCCEEDED") < _event_index(sink, "n1", "FAILED")
    assert _event_index(sink, "n1", "FAILED") < _event_index(sink, "fn0", "QUEUED")
    assert not sink.node_events("fn0")[0].HasField("parent_node_metadata")


def test_a_failing_subworkflow_failure_node_fails_the_subworkflow_node_with_its_own_error(tmp_path):
    ctx = h.make_context(tmp_path)
    parent_saw = {}

    def cleanup(inputs, attempt):
        if inputs["x"] == 3:
            raise RuntimeError("the subworkflow's cleanup broke")
        parent_saw["err"] = inputs["err"].scalar.union.value.scalar.error.message
        return {}

    plugin = InProcessPlugin({"fh_step": failing_step, "fh_sibling": lambda i, a: {"o0": 0}, "fh_cleanup": cleanup})
    closure = h.compile_entity(fh_parent_of_failing_sub, SUB_IN_PROCESS)
    key = h.create_execution(ctx, closure, {"x": 2}, "subcleanupfails")
    status, sink = run_engine(ctx, plugin, key)

    assert status.phase == WorkflowStatusPhase.FAILED
    assert sink.node_phases("n1-0-fn0")[-1] == "FAILED"
    assert status.nodes["n1"].phase == NodeStatusPhase.FAILED
    # The failure node's error masks the subworkflow's, as in Flyte; the parent's failure node gets it.
    assert sink.node_events("n1")[-1].error.message == "RuntimeError: the subworkflow's cleanup broke"
    assert parent_saw["err"] == "RuntimeError: the subworkflow's cleanup broke"
    assert h.workflow_error(sink).message == "RuntimeError: the subworkflow's cleanup broke"
    assert status.nodes["fn0"].phase == NodeStatusPhase.SUCCEEDED


def test_terminating_while_a_subworkflow_failure_node_runs_aborts_only_it(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_step": failing_step, "fh_sibling": lambda i, a: KEEP_RUNNING,
                              "fh_cleanup": lambda i, a: KEEP_RUNNING})
    closure = h.compile_entity(fh_parent_of_failing_sub, SUB_IN_PROCESS)
    key = h.create_execution(ctx, closure, {"x": 2}, "subcleanupabort")

    async def during(engine):
        await h.wait_for(lambda: "n1-0-fn0" in plugin.running)
        status = h.load(ctx, key)[1]
        # The subworkflow node (and so its parent) keeps running while its failure node runs.
        assert status.phase == WorkflowStatusPhase.RUNNING
        assert status.nodes["n1"].phase == NodeStatusPhase.RUNNING
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "stop the subworkflow's cleanup"
        engine.notify(key)

    status, sink = run_engine(ctx, plugin, key, during=during)
    assert status.phase == WorkflowStatusPhase.ABORTED
    # The sibling was aborted when the subworkflow failed, not again on terminate.
    assert plugin.aborted.count("n1-0-n0") == 1
    assert plugin.aborted.count("n1-0-fn0") == 1 and plugin.aborted[-1] == "n1-0-fn0"
    assert sink.node_phases("n1-0-n0").count("ABORTED") == 1
    assert sink.node_phases("n1-0-fn0")[-1] == "ABORTED" and sink.node_phases("n1")[-1] == "ABORTED"
    assert "fn0" not in status.nodes
