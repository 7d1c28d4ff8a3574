"""Workflow compilation features: node kinds, connections, closures and determinism."""

from __future__ import annotations

from flyteidl.core import workflow_pb2
from google.protobuf import duration_pb2

from flytelite.compiler import compile_workflow, get_requirements
from tests.compiler.helpers import (
    BOOL,
    INT,
    RT,
    STR,
    b_int,
    b_str,
    branch_node,
    comparison,
    compile_error,
    ident,
    launch_plan,
    lit_int,
    lst,
    promise,
    task,
    task_node,
    workflow,
)

ECHO = task("echo", inputs={"x": INT}, outputs={"o": INT})
SAY = task("say", inputs={"s": STR}, outputs={"o": STR})
CONST = task("const", outputs={"o": INT})


def _ids(conns, side: str) -> dict[str, list[str]]:
    return {k: list(v.ids) for k, v in getattr(conns, side).items()}


def test_linear_workflow_connections_and_outputs() -> None:
    wf = workflow(
        [task_node("n0", "echo", {"x": promise("", "i")}), task_node("n1", "echo", {"x": promise("n0", "o")})],
        inputs={"i": INT},
        outputs={"out": INT},
        output_bindings={"out": promise("n1", "o")},
    )
    closure = compile_workflow(wf, [], [ECHO], [])
    t = closure.primary.template
    assert [n.id for n in t.nodes] == ["start-node", "end-node", "n0", "n1"]
    # The empty node id (workflow input) is made explicit.
    assert t.nodes[2].inputs[0].binding.promise.node_id == "start-node"
    assert list(t.nodes[1].inputs) == list(t.outputs)
    conns = closure.primary.connections
    assert _ids(conns, "downstream") == {"start-node": ["n0"], "n0": ["n1"], "n1": ["end-node"]}
    assert _ids(conns, "upstream") == {"n0": ["start-node"], "n1": ["n0"], "end-node": ["n1"]}
    assert [ct.template.id.name for ct in closure.tasks] == ["echo"]


def test_independent_nodes_hang_off_start_and_end() -> None:
    wf = workflow([task_node("b", "const"), task_node("a", "const", upstream=("b",))])
    conns = compile_workflow(wf, [], [CONST], []).primary.connections
    assert _ids(conns, "downstream") == {"start-node": ["b"], "b": ["a"], "a": ["end-node"]}


def test_inputs_not_modified_and_output_deterministic() -> None:
    wf = workflow([task_node("n0", "echo", {"x": promise("", "i")}, upstream=("z", "a")[:0])], inputs={"i": INT})
    before = wf.SerializeToString(deterministic=True)
    first = compile_workflow(wf, [], [ECHO], [])
    second = compile_workflow(wf, [], [ECHO], [])
    assert wf.SerializeToString(deterministic=True) == before
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)


def test_upstream_node_ids_are_sorted() -> None:
    wf = workflow([task_node("b", "const"), task_node("a", "const"), task_node("c", "const", upstream=("b", "a"))])
    nodes = compile_workflow(wf, [], [CONST], []).primary.template.nodes
    assert list(nodes[-1].upstream_node_ids) == ["a", "b"]


def test_subworkflow_is_compiled_into_closure() -> None:
    sub = workflow(
        [task_node("s0", "echo", {"x": promise("", "x")})],
        inputs={"x": INT},
        outputs={"o": INT},
        output_bindings={"o": promise("s0", "o")},
        name="sub",
    )
    unused = workflow([task_node("u", "const")], name="unused")
    node = workflow_pb2.Node(id="n0")
    node.workflow_node.sub_workflow_ref.CopyFrom(sub.id)
    node.inputs.add(var="x", binding=promise("", "i"))
    wf = workflow([node, task_node("n1", "say", {"s": promise("n0", "o")})], inputs={"i": INT})
    exc = compile_error(wf, [ECHO, SAY], subworkflows=[sub, unused])
    assert exc.codes == ["MismatchingTypes"]  # the subworkflow's INTEGER output into a STRING input

    wf = workflow([node], inputs={"i": INT}, outputs={"r": INT}, output_bindings={"r": promise("n0", "o")})
    closure = compile_workflow(wf, [unused, sub], [ECHO, CONST], [])
    assert [w.template.id.name for w in closure.sub_workflows] == ["sub"]
    compiled_sub = closure.sub_workflows[0]
    assert [n.id for n in compiled_sub.template.nodes] == ["start-node", "end-node", "s0"]
    assert _ids(compiled_sub.connections, "downstream")["s0"] == ["end-node"]
    assert [t.name for t in get_requirements(wf, [sub]).task_ids] == ["echo"]


def test_self_referencing_subworkflow_is_rejected() -> None:
    node = workflow_pb2.Node(id="again")
    node.workflow_node.sub_workflow_ref.CopyFrom(ident("loop", RT.WORKFLOW))
    sub = workflow([node], name="loop")
    outer = workflow([node])
    assert "CycleDetected" in compile_error(outer, [], subworkflows=[sub]).codes


def test_launch_plan_node_interface() -> None:
    lp = launch_plan("lp", required={"a": INT}, defaults={"b": STR}, outputs={"o": BOOL})
    node = workflow_pb2.Node(id="n0")
    node.workflow_node.launchplan_ref.CopyFrom(lp.id)
    node.inputs.add(var="a", binding=b_int(1))
    wf = workflow([node], outputs={"o": BOOL}, output_bindings={"o": promise("n0", "o")})
    compile_workflow(wf, [], [], [lp])  # b has a default: it need not be bound
    node.inputs.add(var="b", binding=b_int(2))  # but when bound, its type is checked
    wf = workflow([node], outputs={"o": BOOL}, output_bindings={"o": promise("n0", "o")})
    assert compile_error(wf, [], launch_plans=[lp]).codes == ["MismatchingTypes"]


def test_array_node_uses_sub_node_interface() -> None:
    mapped = task("mapped", inputs={"x": lst(INT)}, outputs={"o": lst(INT)})
    node = workflow_pb2.Node(id="map")
    node.array_node.node.CopyFrom(task_node("inner", "mapped"))
    node.array_node.parallelism = 2
    node.inputs.add(var="x", binding=promise("", "xs"))
    wf = workflow([node], inputs={"xs": lst(INT)}, outputs={"o": lst(INT)}, output_bindings={"o": promise("map", "o")})
    closure = compile_workflow(wf, [], [mapped], [])
    assert _ids(closure.primary.connections, "upstream")["map"] == ["start-node"]
    assert [r.name for r in get_requirements(wf).task_ids] == ["mapped"]


def test_array_node_over_a_node_that_kept_its_own_interface_maps_it_into_lists() -> None:
    """flytekit's array_node(launch_plan) keeps the plan's interface and says so (is_original_sub_node_interface):
    every input not bound whole, and every output, is a list of it. Without the flag the types must match."""
    lp = launch_plan("lp", required={"x": INT, "k": STR}, defaults={}, outputs={"o": BOOL})
    node = workflow_pb2.Node(id="map")
    node.array_node.node.workflow_node.launchplan_ref.CopyFrom(lp.id)
    node.array_node.is_original_sub_node_interface.value = True
    node.array_node.bound_inputs.append("k")
    node.inputs.add(var="x", binding=promise("", "xs"))
    node.inputs.add(var="k", binding=b_str("whole"))
    wf = workflow([node], inputs={"xs": lst(INT)}, outputs={"o": lst(BOOL)}, output_bindings={"o": promise("map", "o")})
    compile_workflow(wf, [], [], [lp])
    assert [r.name for r in get_requirements(wf).launch_plan_ids] == ["lp"]

    node.array_node.ClearField("is_original_sub_node_interface")
    wf = workflow([node], inputs={"xs": lst(INT)}, outputs={"o": lst(BOOL)}, output_bindings={"o": promise("map", "o")})
    assert set(compile_error(wf, [], launch_plans=[lp]).codes) == {"MismatchingTypes"}


def test_array_node_over_a_subworkflow_compiles_the_subworkflow_into_the_closure() -> None:
    sub = workflow([task_node("n0", "echo", {"x": promise("", "x")})], name="item", inputs={"x": INT},
                   outputs={"o": INT}, output_bindings={"o": promise("n0", "o")})
    node = workflow_pb2.Node(id="map")
    node.array_node.node.workflow_node.sub_workflow_ref.CopyFrom(ident("item", RT.WORKFLOW))
    node.array_node.is_original_sub_node_interface.value = True
    node.inputs.add(var="x", binding=promise("", "xs"))
    wf = workflow([node], inputs={"xs": lst(INT)}, outputs={"o": lst(INT)}, output_bindings={"o": promise("map", "o")})
    closure = compile_workflow(wf, [sub], [ECHO], [])
    assert [s.template.id.name for s in closure.sub_workflows] == ["item"]


def test_gate_nodes() -> None:
    approve = workflow_pb2.Node(id="approve")
    approve.gate_node.approve.signal_id = "ok"
    approve.inputs.add(var="v", binding=promise("n0", "o"))
    signal = workflow_pb2.Node(id="signal")
    signal.gate_node.signal.signal_id = "pick"
    signal.gate_node.signal.type.CopyFrom(STR)
    signal.gate_node.signal.output_variable_name = "choice"
    sleep = workflow_pb2.Node(id="sleep")
    sleep.gate_node.sleep.duration.CopyFrom(duration_pb2.Duration(seconds=5))
    wf = workflow(
        [
            task_node("n0", "echo", {"x": b_int(1)}),
            approve,
            signal,
            sleep,
            task_node("n1", "echo", {"x": promise("approve", "v")}),
            task_node("n2", "say", {"s": promise("signal", "choice")}),
        ]
    )
    closure = compile_workflow(wf, [], [ECHO, SAY], [])
    assert _ids(closure.primary.connections, "upstream")["n1"] == ["approve"]
    # A signal's output is typed by the signal: feeding it to an INTEGER input fails.
    wf.nodes[-1].CopyFrom(task_node("n2", "echo", {"x": promise("signal", "choice")}))
    assert compile_error(wf, [ECHO, SAY]).codes == ["MismatchingTypes"]


def test_failure_node_records_upstream_only() -> None:
    wf = workflow([task_node("n0", "echo", {"x": promise("", "i")})], inputs={"i": INT})
    wf.failure_node.CopyFrom(task_node("cleanup", "echo", {"x": promise("", "i")}))
    closure = compile_workflow(wf, [], [ECHO], [])
    conns = closure.primary.connections
    assert _ids(conns, "upstream")["cleanup"] == ["start-node"]
    assert "cleanup" not in _ids(conns, "downstream")["start-node"]
    assert closure.primary.template.failure_node.id == "cleanup"
    assert "cleanup" not in [n.id for n in closure.primary.template.nodes]


def test_nested_branch_renames_and_output_intersection() -> None:
    inner = branch_node(
        "inner",
        [(comparison("n", "GT", lit_int(5)), task_node("big", "echo", {"x": promise("", "n")}))],
        else_node=task_node("small", "echo", {"x": promise("", "n")}),
        inputs={"n": promise("", "n")},
    )
    outer = branch_node(
        "outer",
        [(comparison("n", "GT", lit_int(0)), inner)],
        else_node=task_node("neg", "const"),
        inputs={"n": promise("", "n")},
    )
    wf = workflow(
        [outer, task_node("after", "echo", {"x": promise("outer", "o")})],
        inputs={"n": INT},
    )
    closure = compile_workflow(wf, [], [ECHO, CONST], [])
    if_else = closure.primary.template.nodes[2].branch_node.if_else
    assert if_else.case.then_node.id == "outer-inner"
    assert if_else.case.then_node.branch_node.if_else.case.then_node.id == "outer-inner-big"
    assert if_else.else_node.id == "outer-neg"
    upstream = _ids(closure.primary.connections, "upstream")
    assert upstream["outer-inner-big"] == ["start-node"] and upstream["after"] == ["outer"]
    # An output missing from one arm is not an output of the branch.
    lonely = task("lonely", outputs={"other": INT})
    outer.branch_node.if_else.else_node.CopyFrom(task_node("neg", "lonely"))
    wf = workflow([outer, task_node("after", "echo", {"x": promise("outer", "o")})], inputs={"n": INT})
    assert "VariableNameNotFound" in compile_error(wf, [ECHO, lonely]).codes
