"""Workflow failure nodes (`on_failure`) and timeouts in the engine, with tasks run in-process on a real store."""

from __future__ import annotations

from datetime import timedelta

from flyteidl.core import types_pb2
from flytekit import task, workflow
from flytekit.types.error import FlyteError

from flytelite.propeller.phases import NodePhase, WorkflowPhase
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

    assert status.phase == WorkflowPhase.FAILED
    # The original error, not the failure node's outcome.
    err = h.workflow_error(sink)
    assert err.message == "ValueError: step saw 3" and err.kind == 1
    assert status.nodes["fn0"].phase == NodePhase.SUCCEEDED
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
        assert h.load(ctx, key)[1].phase == WorkflowPhase.HANDLING_FAILURE_NODE
        release["go"] = True
        engine.notify(key)

    status, sink = run_engine(ctx, plugin, key, during=during)
    assert status.phase == WorkflowPhase.FAILED
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
    assert status.phase == WorkflowPhase.FAILED
    assert status.nodes["fn0"].phase == NodePhase.FAILED
    assert h.workflow_error(sink).message == "RuntimeError: cleanup broke too"


def test_a_succeeding_workflow_never_runs_its_failure_node(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_step": failing_step, "fh_cleanup": lambda i, a: {}})
    key = h.create_execution(ctx, h.compile_entity(fh_wf, IN_PROCESS), {"x": 5}, "nofailure")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowPhase.SUCCESS
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
    assert status.phase == WorkflowPhase.ABORTED
    assert plugin.aborted.count("fn0") == 1 and plugin.aborted[-1] == "fn0"
    assert sink.node_phases("fn0")[-1] == "ABORTED"


def test_task_timeout_kills_each_attempt_and_the_node_times_out(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"fh_hangs": lambda i, a: KEEP_RUNNING})
    key = h.create_execution(ctx, h.compile_entity(fh_timeout_wf, IN_PROCESS), {"x": 1}, "timesout")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowPhase.FAILED
    node = status.nodes["n0"]
    # retries=1: the first timed-out attempt is retried, the second times the node out.
    assert node.phase == NodePhase.TIMED_OUT and node.attempts == 1
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
    assert status.phase == WorkflowPhase.FAILED
    assert h.workflow_error(sink).message == "ValueError: step saw 3"
    assert status.nodes["fn0"].phase == NodePhase.SUCCEEDED
    assert seen["x"] == 3
    assert seen["err"].scalar.union.value.scalar.error.message == "ValueError: step saw 3"
