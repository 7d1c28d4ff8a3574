"""Nested execution in the engine: branches, inline subworkflows and dynamic workflows (in-process tasks).

Each test runs a small flytekit-compiled closure through the real engine (SQLite file, blob folder)
and checks outputs, phases, the nested node ids and events admin files children by, data dirs,
abort, and that a restart neither reruns succeeded children nor recompiles a dynamic workflow.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

import pytest
from flyteidl.admin import task_pb2
from flyteidl.core import condition_pb2, dynamic_job_pb2, literals_pb2, workflow_pb2
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable

from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo
from flytelite.propeller.engine import Engine
from flytelite.propeller.nodes.branch.conditions import compare
from flytelite.propeller.nodes.registry import default_handlers
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.propeller.scope import fixed_length_unique_id
from flytelite.store.models import FlyteWorkflow
from tests.propeller import harness as h
from tests.propeller import nested_workflows as nw
from tests.propeller.inprocess import KEEP_RUNNING, InProcessPlugin, registry, run_engine

TASKS = ("nst_square", "nst_double", "nst_is_even", "nst_inc", "nst_hold", "nst_total", "nst_fan")
IN_PROCESS = {n: "in-process" for n in TASKS}
BASIC = {
    "nst_square": lambda i, a: {"o0": i["n"] * i["n"]},
    "nst_double": lambda i, a: {"o0": 2 * i["n"]},
    "nst_is_even": lambda i, a: {"o0": i["n"] % 2 == 0},
    "nst_inc": lambda i, a: {"o0": i["x"] + 1},
    "nst_hold": lambda i, a: {"o0": i["x"]},
    "nst_total": lambda i, a: {"o0": sum(i["xs"])},
}


class DynamicInProcess(InProcessPlugin):
    """The in-process plugin, plus tasks that answer with a DynamicJobSpec (written as futures.pb)."""

    def __init__(self, functions: dict, dynamic: dict):
        super().__init__(functions)
        self.dynamic = dynamic
        self.dynamic_calls: list[str] = []

    def handle(self, tctx):
        name = tctx.task.id.name.rsplit(".", 1)[-1]
        if name not in self.dynamic or tctx.state.get("done"):
            return super().handle(tctx)
        self.dynamic_calls.append(tctx.node_id)
        inputs = {k: h.python_value(v) for k, v in tctx.inputs.literals.items()}
        futures = f"{tctx.output_prefix}/futures.pb"
        tctx.ctx.blobs.write_proto(futures, self.dynamic[name](inputs))
        tctx.state["done"] = True
        return PluginPhaseInfo(PluginPhase.SUCCESS, futures_uri=futures)


def template_of(entity):
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=h.P, domain=h.D,
                                     version="v1")
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, entity)
    spec = next(m.to_flyte_idl() for m in entities.values() if isinstance(m.to_flyte_idl(), task_pb2.TaskSpec))
    spec.template.type = "in-process"
    return spec.template


def fan_spec(inputs: dict) -> dynamic_job_pb2.DynamicJobSpec:
    """What nst_fan yields: squares of range(n); for n >= 3 it delegates to nst_fan(n=2) (dynamic in dynamic)."""
    n = inputs["n"]
    if n >= 3:
        inner = template_of(nw.nst_fan)
        node = task_node("dn0", inner, {"n": 2})
        return dynamic_job_pb2.DynamicJobSpec(nodes=[node], tasks=[inner], outputs=[literals_pb2.Binding(
            var="o0", binding=literals_pb2.BindingData(promise={"node_id": "dn0", "var": "o0"}))])
    square = template_of(nw.nst_square)
    nodes = [task_node(f"dn{i}", square, {"n": i}) for i in range(n)]
    collection = literals_pb2.BindingDataCollection(bindings=[
        literals_pb2.BindingData(promise={"node_id": f"dn{i}", "var": "o0"}) for i in range(n)])
    return dynamic_job_pb2.DynamicJobSpec(nodes=nodes, tasks=[square], outputs=[
        literals_pb2.Binding(var="o0", binding=literals_pb2.BindingData(collection=collection))])


def task_node(node_id: str, template, values: dict) -> workflow_pb2.Node:
    return workflow_pb2.Node(
        id=node_id, metadata=workflow_pb2.NodeMetadata(name=template.id.name.rsplit(".", 1)[-1]),
        inputs=[literals_pb2.Binding(var=k, binding=literals_pb2.BindingData(scalar=h.literal(v).scalar))
                for k, v in values.items()],
        task_node=workflow_pb2.TaskNode(reference_id=template.id))


def node_events(sink, node_id: str):
    return sink.node_events(node_id)


# -- branches -----------------------------------------------------------------------------------
@pytest.mark.parametrize("x, arm_path, result", [
    (12, ["n1-n0"], 145),                # a condition on a workflow input
    (3, ["n1-n2"], 7),                   # an elif
    (4, ["n1-n1", "n1-n1-n0"], 9),       # a condition on a task output, then a nested branch
    (6, ["n1-n1", "n1-n1-n1"], 37),      # the nested branch's else
])
def test_branch_runs_the_chosen_arm_as_a_child_of_the_branch(tmp_path, x, arm_path, result):
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(nw.nst_branches, IN_PROCESS), {"x": x}, f"branch{x}")
    status, sink = run_engine(ctx, InProcessPlugin(BASIC), key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": result}
    # In-process tasks finish on their first look, so the branch may succeed in the round it starts.
    assert sink.node_phases("n1") in (["QUEUED", "RUNNING", "SUCCEEDED"], ["QUEUED", "SUCCEEDED"])
    # The chosen arm is the branch's child: id <branch>-<attempt>-<arm>, admin files it under the branch.
    parent_id = "n1"
    for arm in arm_path:
        child_id = fixed_length_unique_id([parent_id, "0", arm])
        events = node_events(sink, child_id)
        assert events, (child_id, [e.id.node_id for e in sink.events if e.DESCRIPTOR.name == "NodeExecutionEvent"])
        assert {(e.spec_node_id, e.parent_node_metadata.node_id, e.retry_group) for e in events} == {
            (arm, parent_id, "0")}
        assert not any(e.is_parent for e in events)
        assert sink.node_phases(child_id)[-1] == "SUCCEEDED"
        parent_id = child_id
    # Arms not taken are not reported (as in Flyte), and a done branch keeps no status of its arms.
    taken = arm_path[0]
    assert not any(e.spec_node_id in {"n1-n0", "n1-n1", "n1-n2"} - {taken} for e in sink.events
                   if e.DESCRIPTOR.name == "NodeExecutionEvent")
    assert status.nodes["n1"].sub_nodes == {} and status.nodes["n1"].branch_taken is None
    # The arm's data lives under the branch's output dir; the branch's outputs are the arm's.
    wf_dir = ctx.blobs.execution_dir(*key)
    arm_out = f"{wf_dir}/n1/data/0/{taken}/0/outputs.pb"
    assert ctx.blobs.exists(arm_out) and ctx.blobs.exists(f"{wf_dir}/n1/data/0/{taken}/inputs.pb")
    assert ctx.blobs.read_bytes(f"{wf_dir}/n1/data/0/outputs.pb") == ctx.blobs.read_bytes(arm_out)


def test_branch_fail_arm_fails_the_execution_with_its_message(tmp_path):
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(nw.nst_branches, IN_PROCESS), {"x": -1}, "branchfail")
    status, sink = run_engine(ctx, InProcessPlugin(BASIC), key)
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert (err.code, err.message, err.kind) == ("UserProvidedError", "[UserProvidedError] x must be positive", 1)
    assert sink.node_phases("n1") == ["QUEUED", "FAILED"]
    # No arm ran: every arm was skipped.
    assert not any(e.spec_node_id in {"n1-n0", "n1-n1", "n1-n2"} for e in sink.events
                   if e.DESCRIPTOR.name == "NodeExecutionEvent")
    assert "n2" not in status.nodes or status.nodes["n2"].phase == NodeStatusPhase.NOT_YET_STARTED


# -- subworkflows -------------------------------------------------------------------------------
def test_subworkflow_runs_nested_and_its_outputs_become_the_nodes(tmp_path):
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(nw.nst_parent, IN_PROCESS), {"x": 3}, "subwf")
    status, sink = run_engine(ctx, InProcessPlugin(BASIC), key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 19}
    assert sink.node_phases("n0") in (["QUEUED", "RUNNING", "SUCCEEDED"], ["QUEUED", "SUCCEEDED"])
    assert all(e.is_parent for e in node_events(sink, "n0"))
    for child in ("start-node", "n0", "n1", "end-node"):
        events = node_events(sink, f"n0-0-{child}")
        assert events and {(e.spec_node_id, e.parent_node_metadata.node_id, e.retry_group) for e in events} == {
            (child, "n0", "0")}
    # Task events of children carry the child's unique id too.
    assert sink.task_phases("n0-0-n1") == [(0, "SUCCEEDED")]
    wf_dir = ctx.blobs.execution_dir(*key)
    inputs = ctx.blobs.read_proto(f"{wf_dir}/n0/data/0/start-node/0/outputs.pb", literals_pb2.LiteralMap)
    assert h.python_value(inputs.literals["a"]) == 3
    assert ctx.blobs.exists(f"{wf_dir}/n0/data/0/n1/inputs.pb")
    assert sink.node_phases("n0-0-n1")[-1] == "SUCCEEDED"


def test_branch_arm_can_be_a_subworkflow_that_nests_another(tmp_path):
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(nw.nst_branch_to_sub, IN_PROCESS), {"x": 2}, "deep")
    status, sink = run_engine(ctx, InProcessPlugin(BASIC), key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 8}
    arm = "n0-0-n0-n0"          # the branch's arm: a subworkflow node
    inner = f"{arm}-0-n0"       # that subworkflow's node, itself a subworkflow
    leaf = f"{inner}-0-n1"      # the innermost task (nst_double)
    assert [e.parent_node_metadata.node_id for e in node_events(sink, inner)] == [arm] * len(node_events(sink, inner))
    assert sink.task_phases(leaf) == [(0, "SUCCEEDED")]
    assert all(e.is_parent for e in node_events(sink, arm) + node_events(sink, inner))
    wf_dir = ctx.blobs.execution_dir(*key)
    assert ctx.blobs.exists(f"{wf_dir}/n0/data/0/n0-n0/0/n0/0/n1/0/outputs.pb")


def test_subworkflow_failure_propagates_the_childs_error(tmp_path):
    ctx = h.make_context(tmp_path)

    def square(inputs, attempt):
        raise ValueError("cannot square that")

    key = h.create_execution(ctx, h.compile_entity(nw.nst_parent, IN_PROCESS), {"x": 3}, "subfail")
    status, sink = run_engine(ctx, InProcessPlugin({**BASIC, "nst_square": square}), key)
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.message == "ValueError: cannot square that" and err.kind == 1
    assert sink.node_phases("n0")[0] == "QUEUED" and sink.node_phases("n0")[-1] == "FAILED"
    assert node_events(sink, "n0")[-1].error.message == "ValueError: cannot square that"
    assert sink.node_phases("n0-0-n0") == ["QUEUED", "FAILED"]


def test_terminate_aborts_nested_running_nodes(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({**BASIC, "nst_hold": lambda i, a: KEEP_RUNNING})
    key = h.create_execution(ctx, h.compile_entity(nw.nst_parent_two, IN_PROCESS), {"x": 2}, "subabort")

    async def terminate(engine):
        engine.notify(key)
        await h.wait_for(lambda: plugin.running == {"n0-0-n0"})
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "terminated by a test"
        engine.notify(key)

    status, sink = run_engine(ctx, plugin, key, during=terminate)
    assert status.phase == WorkflowStatusPhase.ABORTED
    assert plugin.aborted == ["n0-0-n0"]
    assert sink.node_phases("n0-0-n0")[-1] == "ABORTED"
    assert sink.node_phases("n0")[-1] == "ABORTED"
    assert sink.task_phases("n0-0-n0")[-1] == (0, "ABORTED")


def test_restart_mid_subworkflow_does_not_rerun_succeeded_children(tmp_path):
    ctx = h.make_context(tmp_path)
    release, squares = {"go": False}, []

    def hold(inputs, attempt):
        return {"o0": inputs["x"]} if release["go"] else KEEP_RUNNING

    def square(inputs, attempt):
        squares.append(inputs["n"])
        return {"o0": inputs["n"] ** 2}

    functions = {**BASIC, "nst_hold": hold, "nst_square": square}
    key = h.create_execution(ctx, h.compile_entity(nw.nst_parent_two, IN_PROCESS), {"x": 5}, "subrestart")
    first = InProcessPlugin(functions)

    async def first_run():
        plugins = registry(first)
        engine = Engine(ctx, h.RecordingSink(), plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        engine.notify(key)
        await h.wait_for(lambda: h.load(ctx, key)[1].nodes.get("n0") is not None
                         and h.load(ctx, key)[1].nodes["n0"].sub_nodes.get("n1", None) is not None
                         and h.load(ctx, key)[1].nodes["n0"].sub_nodes["n1"].phase
                         == NodeStatusPhase.SUCCEEDED)
        await engine.stop()

    asyncio.run(first_run())
    assert squares == [5]
    release["go"] = True
    status, _ = run_engine(ctx, InProcessPlugin(functions), key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": [5, 25]}
    assert squares == [5]


# -- dynamic workflows --------------------------------------------------------------------------
def test_dynamic_runs_its_children_nested_and_builds_outputs_from_the_spec(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = DynamicInProcess(BASIC, {"nst_fan": fan_spec})
    key = h.create_execution(ctx, h.compile_entity(nw.nst_dynamic, IN_PROCESS), {"n": 2}, "dyn")
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1}
    assert sink.node_phases("n0") == ["QUEUED", "DYNAMIC_RUNNING", "SUCCEEDED"]
    running = node_events(sink, "n0")[1]
    assert running.is_dynamic and running.is_parent
    compiled = running.task_node_metadata.dynamic_workflow.compiled_workflow
    assert [n.id for n in compiled.primary.template.nodes if n.id.startswith("dn")] == ["dn0", "dn1"]
    assert running.task_node_metadata.dynamic_workflow.dynamic_job_spec_uri.endswith("/n0/data/0/futures.pb")
    assert node_events(sink, "n0")[-1].is_dynamic
    for child in ("dn0", "dn1"):
        events = node_events(sink, f"n0-0-{child}")
        assert [e.phase for e in events] and all(
            (e.spec_node_id, e.parent_node_metadata.node_id, e.retry_group, e.is_in_dynamic_chain)
            == (child, "n0", "0", True) for e in events)
    wf_dir = ctx.blobs.execution_dir(*key)
    assert ctx.blobs.exists(f"{wf_dir}/n0/data/0/dynamic_compiled.pb")
    assert ctx.blobs.exists(f"{wf_dir}/n0/data/0/dn1/0/outputs.pb")
    outputs = ctx.blobs.read_proto(f"{wf_dir}/n0/data/0/outputs.pb", literals_pb2.LiteralMap)
    assert h.python_value(outputs.literals["o0"]) == [0, 1]
    assert plugin.dynamic_calls == ["n0"]


def test_dynamic_inside_dynamic(tmp_path):
    ctx = h.make_context(tmp_path, )
    plugin = DynamicInProcess(BASIC, {"nst_fan": fan_spec})
    key = h.create_execution(ctx, h.compile_entity(nw.nst_dynamic, IN_PROCESS), {"n": 3}, "dyndyn",
                             max_parallelism=1)
    status, sink = run_engine(ctx, plugin, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1}
    assert plugin.dynamic_calls == ["n0", "n0-0-dn0"]
    assert sink.node_phases("n0-0-dn0") == ["QUEUED", "DYNAMIC_RUNNING", "SUCCEEDED"]
    grandchild = node_events(sink, "n0-0-dn0-0-dn1")
    assert grandchild and grandchild[-1].parent_node_metadata.node_id == "n0-0-dn0"
    assert grandchild[-1].is_in_dynamic_chain
    assert sink.node_phases("n0-0-dn0-0-dn1")[-1] == "SUCCEEDED"


def test_restart_mid_dynamic_keeps_the_compiled_workflow_and_finished_children(tmp_path):
    ctx = h.make_context(tmp_path)
    release, squares = {"go": False}, []

    def square(inputs, attempt):
        if inputs["n"] == 1 and not release["go"]:
            return KEEP_RUNNING
        squares.append(inputs["n"])
        return {"o0": inputs["n"] ** 2}

    functions = {**BASIC, "nst_square": square}
    key = h.create_execution(ctx, h.compile_entity(nw.nst_dynamic, IN_PROCESS), {"n": 2}, "dynrestart")
    first = DynamicInProcess(functions, {"nst_fan": fan_spec})

    async def first_run():
        plugins = registry(first)
        engine = Engine(ctx, h.RecordingSink(), plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        engine.notify(key)
        await h.wait_for(lambda: first.running == {"n0-0-dn1"} and squares == [0])
        await asyncio.sleep(0.2)
        await engine.stop()

    asyncio.run(first_run())
    release["go"] = True
    second = DynamicInProcess(functions, {"nst_fan": fan_spec})
    status, _ = run_engine(ctx, second, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 1}
    assert squares == [0, 1] and second.dynamic_calls == []


# -- pure pieces --------------------------------------------------------------------------------
@pytest.mark.parametrize("parts, expected", [
    (["x", "y", "z"], "x-y-z"),
    (["", "", "n1"], "n1"),
    (["n0", "0", "dn12"], "n0-0-dn12"),
    # Flyte's own golden values (flytestdlib encoder_test.go, GenerateUniqueID tests).
    (["u1111111111323131231asdadasd", "2", "n1"], "fraibbty"),
    (["xxxxxxxxxxxxxxxxxxxxxxxx"], "fuaa3aji"),
])
def test_unique_ids_match_flytepropeller(parts, expected):
    assert fixed_length_unique_id(parts) == expected


def _cmp(left, op, right, inputs=None):
    def operand(v):
        if isinstance(v, str) and v.startswith("$"):
            return condition_pb2.Operand(var=v[1:])
        if v is None:
            return condition_pb2.Operand(scalar=literals_pb2.Scalar(none_type=literals_pb2.Void()))
        return condition_pb2.Operand(primitive=h.literal(v).scalar.primitive)
    expr = condition_pb2.ComparisonExpression(operator=op, left_value=operand(left), right_value=operand(right))
    return compare(expr, h.literal_map(inputs or {}))


def test_conditions_compare_like_flytepropeller():
    op = condition_pb2.ComparisonExpression
    assert _cmp("$x", op.GT, 3, {"x": 4}) and not _cmp("$x", op.LTE, 3, {"x": 4})
    assert _cmp("$s", op.EQ, "a", {"s": "a"}) and _cmp(2.5, op.LT, 3.0)
    assert _cmp("$b", op.EQ, True, {"b": True})
    assert _cmp(None, op.EQ, None) and _cmp("$x", op.NEQ, None, {"x": 1})
    with pytest.raises(Exception, match=r"\[MalformedBranchUserError\] \[GT\] not defined for boolean"):
        _cmp(True, op.GT, False)
    with pytest.raises(Exception, match="different primitives types"):
        _cmp("$x", op.EQ, 1.0, {"x": 1})
    with pytest.raises(Exception, match=r"Failed to find Value for Variable \[y\]"):
        _cmp("$y", op.EQ, 1, {"x": 1})
