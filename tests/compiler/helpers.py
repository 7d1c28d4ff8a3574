"""Small builders for compiler tests: types, literals, tasks, nodes and workflows."""

from __future__ import annotations

from flyteidl.admin import launch_plan_pb2
from flyteidl.core import (
    compiler_pb2,
    condition_pb2,
    identifier_pb2,
    interface_pb2,
    literals_pb2,
    tasks_pb2,
    types_pb2,
    workflow_pb2,
)
from google.protobuf import struct_pb2

from flytelite.compiler import CompileError, compile_workflow

LT = types_pb2.LiteralType
ST = types_pb2.SimpleType
RT = identifier_pb2.ResourceType


def simple(name: str) -> LT:
    return LT(simple=ST.Value(name))


INT, FLOAT, STR, BOOL = simple("INTEGER"), simple("FLOAT"), simple("STRING"), simple("BOOLEAN")
NONE, STRUCT, DATETIME, DURATION = simple("NONE"), simple("STRUCT"), simple("DATETIME"), simple("DURATION")


def lst(t: LT) -> LT:
    return LT(collection_type=t)


def dct(t: LT) -> LT:
    return LT(map_value_type=t)


def union(*variants: LT) -> LT:
    out = LT()
    out.union_type.variants.extend(variants)
    return out


def enum(*values: str) -> LT:
    return LT(enum_type=types_pb2.EnumType(values=values))


def blob(fmt: str = "", multipart: bool = False) -> LT:
    dim = types_pb2.BlobType.MULTIPART if multipart else types_pb2.BlobType.SINGLE
    return LT(blob=types_pb2.BlobType(format=fmt, dimensionality=dim))


_COL = types_pb2.SchemaType.SchemaColumn


def schema(**cols: str) -> LT:
    out = LT()
    out.schema.SetInParent()
    for name, kind in cols.items():
        out.schema.columns.add(name=name, type=_COL.SchemaColumnType.Value(kind))
    return out


def sd(fmt: str = "", **cols: LT) -> LT:
    out = LT()
    out.structured_dataset_type.format = fmt
    out.structured_dataset_type.SetInParent()
    for name, t in cols.items():
        out.structured_dataset_type.columns.add(name=name, literal_type=t)
    return out


def tagged(t: LT, tag: str) -> LT:
    out = LT()
    out.CopyFrom(t)
    out.structure.tag = tag
    return out


def with_metadata(t: LT, meta: dict) -> LT:
    out = LT()
    out.CopyFrom(t)
    s = struct_pb2.Struct()
    s.update(meta)
    out.metadata.CopyFrom(s)
    return out


def dataclass_type(**fields: LT) -> LT:
    out = LT(simple=ST.STRUCT)
    for k, v in fields.items():
        out.structure.dataclass_type[k].CopyFrom(v)
    return out


# --- literals and bindings ---


def lit_int(v: int) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=v)))


def lit_str(v: str) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(string_value=v)))


def lit_float(v: float) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(float_value=v)))


def lit_none() -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(none_type=literals_pb2.Void()))


def lit_list(*items: literals_pb2.Literal) -> literals_pb2.Literal:
    return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(literals=items))


def lit_map(**items: literals_pb2.Literal) -> literals_pb2.Literal:
    return literals_pb2.Literal(map=literals_pb2.LiteralMap(literals=items))


def b_int(v: int) -> literals_pb2.BindingData:
    return literals_pb2.BindingData(scalar=lit_int(v).scalar)


def b_str(v: str) -> literals_pb2.BindingData:
    return literals_pb2.BindingData(scalar=lit_str(v).scalar)


def b_list(*items: literals_pb2.BindingData) -> literals_pb2.BindingData:
    return literals_pb2.BindingData(collection=literals_pb2.BindingDataCollection(bindings=items))


def b_map(**items: literals_pb2.BindingData) -> literals_pb2.BindingData:
    return literals_pb2.BindingData(map=literals_pb2.BindingDataMap(bindings=items))


def promise(node_id: str, var: str, *attrs: str | int) -> literals_pb2.BindingData:
    ref = types_pb2.OutputReference(node_id=node_id, var=var)
    for a in attrs:
        if isinstance(a, int):
            ref.attr_path.add(int_value=a)
        else:
            ref.attr_path.add(string_value=a)
    return literals_pb2.BindingData(promise=ref)


# --- entities ---


def ident(name: str, kind: int = RT.TASK) -> identifier_pb2.Identifier:
    return identifier_pb2.Identifier(resource_type=kind, project="p", domain="d", name=name, version="v")


def var_map(vars: dict[str, LT]) -> interface_pb2.VariableMap:
    vm = interface_pb2.VariableMap()
    for k, t in vars.items():
        vm.variables[k].type.CopyFrom(t)
    return vm


def iface(inputs: dict[str, LT] | None = None, outputs: dict[str, LT] | None = None) -> interface_pb2.TypedInterface:
    return interface_pb2.TypedInterface(inputs=var_map(inputs or {}), outputs=var_map(outputs or {}))


def task(name: str, inputs: dict[str, LT] | None = None, outputs: dict[str, LT] | None = None) -> compiler_pb2.CompiledTask:
    t = tasks_pb2.TaskTemplate(id=ident(name), type="python-task", interface=iface(inputs, outputs))
    t.container.image = "img"
    t.container.args.append("run")
    return compiler_pb2.CompiledTask(template=t)


def bindings(inputs: dict[str, literals_pb2.BindingData]) -> list[literals_pb2.Binding]:
    return [literals_pb2.Binding(var=k, binding=v) for k, v in inputs.items()]


def task_node(node_id: str, task_name: str, inputs: dict | None = None, upstream: tuple = ()) -> workflow_pb2.Node:
    n = workflow_pb2.Node(id=node_id, upstream_node_ids=upstream)
    n.task_node.reference_id.CopyFrom(ident(task_name))
    n.inputs.extend(bindings(inputs or {}))
    return n


def comparison(left_var: str, op: str, right: literals_pb2.Literal) -> condition_pb2.BooleanExpression:
    return condition_pb2.BooleanExpression(
        comparison=condition_pb2.ComparisonExpression(
            operator=condition_pb2.ComparisonExpression.Operator.Value(op),
            left_value=condition_pb2.Operand(var=left_var),
            right_value=condition_pb2.Operand(primitive=right.scalar.primitive),
        )
    )


def branch_node(
    node_id: str,
    cases: list[tuple[condition_pb2.BooleanExpression | None, workflow_pb2.Node | None]],
    else_node: workflow_pb2.Node | None = None,
    error: bool = False,
    inputs: dict | None = None,
) -> workflow_pb2.Node:
    n = workflow_pb2.Node(id=node_id)
    if_else = n.branch_node.if_else
    for i, (cond, then) in enumerate(cases):
        block = if_else.case if i == 0 else if_else.other.add()
        block.SetInParent()
        if cond is not None:
            block.condition.CopyFrom(cond)
        if then is not None:
            block.then_node.CopyFrom(then)
    if else_node is not None:
        if_else.else_node.CopyFrom(else_node)
    if error:
        if_else.error.message = "no branch matched"
        if_else.error.failed_node_id = node_id
    n.branch_node.SetInParent()
    n.inputs.extend(bindings(inputs or {}))
    return n


def workflow(
    nodes: list[workflow_pb2.Node],
    inputs: dict[str, LT] | None = None,
    outputs: dict[str, LT] | None = None,
    output_bindings: dict | None = None,
    name: str = "wf",
) -> workflow_pb2.WorkflowTemplate:
    wf = workflow_pb2.WorkflowTemplate(id=ident(name, RT.WORKFLOW), interface=iface(inputs, outputs))
    wf.nodes.extend(nodes)
    wf.outputs.extend(bindings(output_bindings or {}))
    return wf


def launch_plan(name: str, required: dict[str, LT], defaults: dict[str, LT], outputs: dict[str, LT]):
    lp = launch_plan_pb2.LaunchPlan(id=ident(name, RT.LAUNCH_PLAN))
    params = lp.closure.expected_inputs
    for k, t in required.items():
        params.parameters[k].var.type.CopyFrom(t)
        params.parameters[k].required = True
    for k, t in defaults.items():
        params.parameters[k].var.type.CopyFrom(t)
    lp.closure.expected_outputs.CopyFrom(var_map(outputs))
    return lp


def compile_error(wf, tasks=(), subworkflows=(), launch_plans=()) -> CompileError:
    try:
        compile_workflow(wf, list(subworkflows), list(tasks), list(launch_plans))
    except CompileError as exc:
        return exc
    raise AssertionError("expected the workflow not to compile")
