"""Every error code the compiler can produce, each triggered by a minimal broken task or workflow."""

from __future__ import annotations

import pytest
from flyteidl.core import compiler_pb2, literals_pb2, tasks_pb2, workflow_pb2
from google.protobuf import struct_pb2

from flytelite.compiler import ALL_CODES, CompileError, compile_task, compile_workflow
from flytelite.compiler import errors as E
from tests.compiler.helpers import (
    INT,
    RT,
    STR,
    b_int,
    b_str,
    branch_node,
    comparison,
    compile_error,
    ident,
    lit_int,
    lit_str,
    promise,
    task,
    task_node,
    workflow,
)

FLYTE_CODES = {
    "CycleDetected", "BranchNodeIdNotFound", "BranchNodeHasNoCondition", "BranchNodeHasNoDefault",
    "ValueRequired", "InvalidValue", "NodeReferenceNotFound", "TaskReferenceNotFound",
    "WorkflowReferenceNotFound", "VariableNameNotFound", "DuplicateAlias", "DuplicateId", "MismatchingTypes",
    "MismatchingBindings", "MismatchingInterfaces", "InconsistentTypes", "ParameterBoundMoreThanOnce",
    "ParameterNotBound", "NoEntryNodeFound", "UnreachableNodes", "UnrecognizedValue", "WorkflowBuildError",
    "ValueCollision", "SyntaxError", "NoNodesFound", "IllegalEnumValue", "AmbiguousBindingUnionValue",
    "IncompatibleBindingUnionValue", "NoConditionFound", "FieldNotFound", "InvalidLiteralType",
}  # fmt: skip

ADD = task("add", inputs={"x": INT, "y": INT}, outputs={"o": INT})
ECHO = task("echo", inputs={"x": INT}, outputs={"o": INT})
SAY = task("say", inputs={"s": STR}, outputs={"o": STR})


def test_all_flyte_codes_are_defined() -> None:
    assert set(ALL_CODES) == FLYTE_CODES


def test_error_text_lists_every_issue() -> None:
    wf = workflow([task_node("n1", "echo", {}), task_node("n2", "say", {"s": b_int(3)})])
    exc = compile_error(wf, [ECHO, SAY])
    lines = str(exc).splitlines()
    assert len(lines) == len(exc.errors) == 2
    assert lines[0].startswith("MismatchingTypes: [node n2] ")
    assert lines[1] == "ParameterNotBound: [node n1] Required input [x] is not bound."
    assert all(isinstance(i, E.CompilerIssue) for i in exc.errors)


def test_cycle_detected() -> None:
    wf = workflow(
        [
            task_node("a", "add", {"x": promise("start-node", "i"), "y": promise("b", "o")}),
            task_node("b", "echo", {"x": promise("a", "o")}),
        ],
        inputs={"i": INT},
    )
    exc = compile_error(wf, [ADD, ECHO])
    assert exc.codes == ["CycleDetected"]
    assert "a > b > a" in exc.errors[0].message


def test_unreachable_nodes() -> None:
    wf = workflow(
        [
            task_node("solo", "echo", {"x": b_int(1)}),
            task_node("a", "echo", {"x": promise("b", "o")}),
            task_node("b", "echo", {"x": promise("a", "o")}),
        ]
    )
    exc = compile_error(wf, [ECHO])
    assert exc.codes == ["UnreachableNodes"]
    assert "[a,b]" in exc.errors[0].message


def test_parameter_not_bound_for_workflow_output() -> None:
    wf = workflow([task_node("a", "echo", {"x": b_int(1)})], outputs={"out": INT})
    assert compile_error(wf, [ECHO]).codes == ["ParameterNotBound"]


def test_mismatching_types_names_both_sides() -> None:
    wf = workflow([task_node("a", "echo", {"x": b_int(1)}), task_node("b", "say", {"s": promise("a", "o")})])
    exc = compile_error(wf, [ECHO, SAY])
    assert exc.codes == ["MismatchingTypes"]
    assert exc.errors[0].node_id == "b"
    assert "[INTEGER]" in exc.errors[0].message and "[STRING]" in exc.errors[0].message


def test_variable_name_not_found_for_input_and_output() -> None:
    wf = workflow([task_node("a", "echo", {"x": b_int(1), "nope": b_int(2)})])
    assert compile_error(wf, [ECHO]).codes == ["VariableNameNotFound"]
    wf = workflow([task_node("a", "echo", {"x": b_int(1)}), task_node("b", "echo", {"x": promise("a", "missing")})])
    assert set(compile_error(wf, [ECHO]).codes) == {"VariableNameNotFound", "ParameterNotBound"}


def test_duplicate_node_ids() -> None:
    wf = workflow([task_node("a", "echo", {"x": b_int(1)}), task_node("a", "echo", {"x": b_int(2)})])
    exc = compile_error(wf, [ECHO])
    assert exc.codes == ["DuplicateId"] and exc.errors[0].node_id == "a"


def test_duplicate_subworkflow_ids() -> None:
    sub = workflow([task_node("s", "echo", {"x": b_int(1)})], name="sub")
    wf = workflow([task_node("a", "echo", {"x": b_int(1)})])
    assert compile_error(wf, [ECHO], subworkflows=[sub, sub]).codes == ["DuplicateId"]


def test_no_nodes_found() -> None:
    assert compile_error(workflow([]), []).codes == ["NoNodesFound"]


def test_node_reference_not_found() -> None:
    wf = workflow([task_node("a", "echo", {"x": promise("ghost", "o")})])
    assert set(compile_error(wf, [ECHO]).codes) == {"NodeReferenceNotFound", "ParameterNotBound"}
    wf = workflow([task_node("a", "echo", {"x": b_int(1)}, upstream=("ghost",))])
    assert compile_error(wf, [ECHO]).codes == ["NodeReferenceNotFound"]


def test_task_reference_not_found() -> None:
    wf = workflow([task_node("a", "missing-task", {})])
    exc = compile_error(wf, [ECHO])
    assert exc.codes == ["TaskReferenceNotFound"] and "missing-task" in exc.errors[0].message


def test_workflow_reference_not_found() -> None:
    n = workflow_pb2.Node(id="sub")
    n.workflow_node.sub_workflow_ref.CopyFrom(ident("nowhere", RT.WORKFLOW))
    assert compile_error(workflow([n]), []).codes == ["WorkflowReferenceNotFound"]
    n = workflow_pb2.Node(id="lp")
    n.workflow_node.launchplan_ref.CopyFrom(ident("nowhere", RT.LAUNCH_PLAN))
    assert compile_error(workflow([n]), []).codes == ["WorkflowReferenceNotFound"]


def test_parameter_bound_more_than_once() -> None:
    n = task_node("a", "echo", {"x": b_int(1)})
    n.inputs.add(var="x", binding=b_int(2))
    assert compile_error(workflow([n]), [ECHO]).codes == ["ParameterBoundMoreThanOnce"]


def test_duplicate_alias() -> None:
    n = task_node("a", "echo", {"x": b_int(1)})
    n.output_aliases.add(var="o", alias="first")
    n.output_aliases.add(var="o", alias="second")
    assert compile_error(workflow([n]), [ECHO]).codes == ["DuplicateAlias"]


def test_alias_of_missing_output() -> None:
    n = task_node("a", "echo", {"x": b_int(1)})
    n.output_aliases.add(var="nope", alias="renamed")
    assert compile_error(workflow([n]), [ECHO]).codes == ["ParameterNotBound"]


def test_empty_binding_value_required() -> None:
    n = task_node("a", "echo", {})
    n.inputs.add(var="x")
    # Like Flyte, the empty binding does not count as binding the input.
    assert compile_error(workflow([n]), [ECHO]).codes == ["ParameterNotBound", "ValueRequired"]


def test_syntax_error_in_output_reference() -> None:
    wf = workflow([task_node("a", "echo", {"x": b_int(1)}), task_node("b", "echo", {"x": promise("a", "o.p")})])
    assert compile_error(wf, [ECHO]).codes == ["SyntaxError"]


def test_unrecognized_scalar_value() -> None:
    blob = literals_pb2.Scalar(blob=literals_pb2.Blob(uri="s3://b/k"))
    wf = workflow([task_node("a", "echo", {"x": literals_pb2.BindingData(scalar=blob)})])
    assert set(compile_error(wf, [ECHO]).codes) == {"UnrecognizedValue"}


def test_gate_without_condition() -> None:
    n = workflow_pb2.Node(id="gate")
    n.gate_node.SetInParent()
    assert compile_error(workflow([n]), []).codes == ["NoConditionFound"]


def test_signal_without_type() -> None:
    n = workflow_pb2.Node(id="gate")
    n.gate_node.signal.signal_id = "approval"
    n.gate_node.signal.output_variable_name = "o"
    assert compile_error(workflow([n]), []).codes == ["ValueRequired"]


def test_node_without_target() -> None:
    assert compile_error(workflow([workflow_pb2.Node(id="empty")]), []).codes == ["ValueRequired"]


def _square() -> workflow_pb2.Node:
    return task_node("sq", "echo", {"x": promise("start-node", "n")})


def test_branch_without_condition() -> None:
    wf = workflow([branch_node("b", [(None, _square())], error=True)], inputs={"n": INT})
    assert compile_error(wf, [ECHO]).codes == ["BranchNodeHasNoCondition"]


def test_branch_without_default() -> None:
    wf = workflow(
        [branch_node("b", [(comparison("n", "GT", lit_int(1)), _square())], inputs={"n": promise("", "n")})],
        inputs={"n": INT},
    )
    assert compile_error(wf, [ECHO]).codes == ["BranchNodeHasNoDefault"]


def test_branch_case_without_node() -> None:
    wf = workflow(
        [
            branch_node(
                "b",
                [(comparison("n", "GT", lit_int(1)), _square()), (comparison("n", "LT", lit_int(0)), None)],
                error=True,
                inputs={"n": promise("", "n")},
            )
        ],
        inputs={"n": INT},
    )
    # As in Flyte, a branch whose interface cannot be computed is also reported unreachable.
    assert set(compile_error(wf, [ECHO]).codes) == {"BranchNodeIdNotFound", "ValueRequired", "UnreachableNodes"}


def test_branch_condition_type_mismatch() -> None:
    wf = workflow(
        [branch_node("b", [(comparison("n", "EQ", lit_str("1")), _square())], error=True, inputs={"n": promise("", "n")})],
        inputs={"n": INT},
    )
    assert compile_error(wf, [ECHO]).codes == ["MismatchingTypes"]


def test_branch_condition_unknown_variable() -> None:
    wf = workflow(
        [branch_node("b", [(comparison("m", "EQ", lit_int(1)), _square())], error=True, inputs={"n": promise("", "n")})],
        inputs={"n": INT},
    )
    assert compile_error(wf, [ECHO]).codes == ["VariableNameNotFound"]


def test_branch_arms_with_different_output_types() -> None:
    say = task_node("sy", "say", {"s": b_str("x")})
    wf = workflow(
        [branch_node("b", [(comparison("n", "GT", lit_int(1)), _square())], else_node=say, inputs={"n": promise("", "n")})],
        inputs={"n": INT},
    )
    exc = compile_error(wf, [ECHO, SAY])
    assert exc.codes[0] == "MismatchingTypes" and exc.errors[0].node_id == "b-sy"


# --- task compiler ---


def _container_task(**kw) -> tasks_pb2.TaskTemplate:
    return task("t", inputs={"x": INT}).template if not kw else tasks_pb2.TaskTemplate(**kw)


def test_task_without_id() -> None:
    t = _container_task()
    t.ClearField("id")
    with pytest.raises(CompileError) as exc:
        compile_task(t)
    assert exc.value.codes == ["ValueRequired"]


def test_container_without_image_or_command() -> None:
    t = _container_task()
    t.container.image = ""
    del t.container.args[:]
    with pytest.raises(CompileError) as exc:
        compile_task(t)
    assert exc.value.codes == ["ValueRequired", "ValueRequired"]


def test_container_bad_resource_quantity() -> None:
    t = _container_task()
    t.container.resources.requests.add(name=tasks_pb2.Resources.CPU, value="lots")
    t.container.resources.limits.add(name=tasks_pb2.Resources.MEMORY, value="1Gi")
    with pytest.raises(CompileError) as exc:
        compile_task(t)
    assert exc.value.codes == ["UnrecognizedValue"] and exc.value.errors[0].node_id == "resources.CPU"


@pytest.mark.parametrize("q", ["1", "500m", "1.5", "2Gi", "128Mi", "1e3", ".5", "+1k"])
def test_valid_quantities(q: str) -> None:
    t = _container_task()
    t.container.resources.requests.add(name=tasks_pb2.Resources.CPU, value=q)
    assert compile_task(t).template == t


def test_pod_task_container_names() -> None:
    t = tasks_pb2.TaskTemplate(id=ident("pod"))
    spec = struct_pb2.Struct()
    spec.update({"containers": [{"name": "primary"}, {"name": "Bad_Name"}]})
    t.k8s_pod.pod_spec.CopyFrom(spec)
    with pytest.raises(CompileError) as exc:
        compile_task(t)
    assert exc.value.codes == ["InvalidValue"]
    spec.update({"containers": [{"name": "primary"}]})
    t.k8s_pod.pod_spec.CopyFrom(spec)
    assert compile_task(t).template == t


def test_compiled_task_list_requires_ids() -> None:
    with pytest.raises(CompileError) as exc:
        compile_workflow(workflow([task_node("a", "echo", {})]), [], [compiler_pb2.CompiledTask()], [])
    assert exc.value.codes == ["ValueRequired"]
