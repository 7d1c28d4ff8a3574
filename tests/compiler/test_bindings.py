"""Table tests of bindings inside real workflows: each case compiles or fails with an exact code."""

from __future__ import annotations

import pytest
from flyteidl.core import literals_pb2

from flytelite.compiler import CompileError, compile_workflow
from tests.compiler.helpers import (
    FLOAT,
    INT,
    NONE,
    STR,
    STRUCT,
    b_int,
    b_list,
    b_map,
    b_str,
    blob,
    dataclass_type,
    dct,
    enum,
    lst,
    promise,
    sd,
    task,
    task_node,
    union,
    workflow,
)


def b_union(value: literals_pb2.BindingData, t) -> literals_pb2.BindingData:
    u = literals_pb2.Union(value=literals_pb2.Literal(scalar=value.scalar), type=t)
    return literals_pb2.BindingData(scalar=literals_pb2.Scalar(union=u))


def b_none() -> literals_pb2.BindingData:
    return literals_pb2.BindingData(scalar=literals_pb2.Scalar(none_type=literals_pb2.Void()))


def _compile_codes(wf, tasks) -> set[str]:
    try:
        compile_workflow(wf, [], tasks, [])
    except CompileError as exc:
        return set(exc.codes)
    return set()


# (case id, upstream output type, downstream input type, attr path, expected error code or None)
PROMISES = [
    ("same-type", INT, INT, (), None),
    ("int-to-str", INT, STR, (), "MismatchingTypes"),
    ("enum-to-str", enum("a"), STR, (), None),
    ("optional-to-required", union(INT, NONE), INT, (), "MismatchingTypes"),
    ("int-to-optional", INT, union(INT, NONE), (), None),
    ("ambiguous-union-promise", INT, union(INT, INT), (), "MismatchingTypes"),
    ("union-promise-to-superset", union(INT, STR), union(STR, INT, FLOAT), (), None),
    ("list-element-by-attr", lst(INT), INT, (0,), None),
    ("list-element-wrong-type", lst(INT), STR, (0,), "MismatchingTypes"),
    ("map-value-by-attr", dct(STR), STR, ("k",), None),
    ("dataclass-field", dataclass_type(a=INT, b=STR), STR, ("b",), None),
    ("dataclass-field-wrong-type", dataclass_type(a=INT, b=STR), INT, ("b",), "MismatchingTypes"),
    ("dataclass-missing-field", dataclass_type(a=INT), INT, ("zz",), "FieldNotFound"),
    ("nested-list-map-attr", lst(dct(FLOAT)), FLOAT, (1, "x"), None),
    ("blob-formats", blob("csv"), blob("pdf"), (), "MismatchingTypes"),
    ("sd-to-generic-sd", sd("parquet", a=INT), sd(), (), None),
    ("struct-without-schemas", STRUCT, STRUCT, (), None),
]


@pytest.mark.parametrize("up,down,attrs,code", [c[1:] for c in PROMISES], ids=[c[0] for c in PROMISES])
def test_promise_binding(up, down, attrs, code) -> None:
    wf = workflow(
        [task_node("a", "producer"), task_node("b", "consumer", {"x": promise("a", "o", *attrs)})],
    )
    codes = _compile_codes(wf, [task("producer", outputs={"o": up}), task("consumer", inputs={"x": down})])
    assert codes == ({code} if code else set())


# (case id, binding, downstream input type, expected error code or None)
LITERALS = [
    ("int-literal", b_int(1), INT, None),
    ("int-literal-to-str", b_int(1), STR, "MismatchingTypes"),
    ("str-literal-to-int", b_str("1"), INT, "MismatchingTypes"),
    ("int-literal-to-float", b_int(1), FLOAT, "MismatchingTypes"),
    ("legal-enum-value", b_str("red"), enum("red", "blue"), None),
    ("illegal-enum-value", b_str("green"), enum("red", "blue"), "IllegalEnumValue"),
    ("int-to-union", b_int(1), union(INT, STR), None),
    ("int-to-ambiguous-union", b_int(1), union(INT, INT), "MismatchingTypes"),
    ("int-to-incompatible-union", b_int(1), union(STR, FLOAT), "MismatchingTypes"),
    ("list-literal", b_list(b_int(1), b_int(2)), lst(INT), None),
    ("list-literal-wrong-element", b_list(b_int(1), b_str("x")), lst(INT), "MismatchingTypes"),
    ("list-to-scalar", b_list(b_int(1)), INT, "MismatchingBindings"),
    ("map-literal", b_map(a=b_str("x")), dct(STR), None),
    ("map-to-list", b_map(a=b_str("x")), lst(STR), "MismatchingBindings"),
    ("list-to-list-of-unions", b_list(b_int(1)), lst(union(INT, STR)), None),
    ("list-to-union-of-lists", b_list(b_int(1)), union(lst(INT), lst(STR)), None),
    ("list-to-ambiguous-union", b_list(b_int(1)), union(lst(INT), lst(INT)), "AmbiguousBindingUnionValue"),
    ("list-to-incompatible-union", b_list(b_int(1)), union(STR, FLOAT), "IncompatibleBindingUnionValue"),
    ("map-to-incompatible-union", b_map(a=b_int(1)), union(lst(INT), STR), "IncompatibleBindingUnionValue"),
    ("union-literal-to-union", b_union(b_int(1), INT), union(INT, STR), None),
    ("union-literal-wrong-variant", b_union(b_int(1), INT), union(FLOAT, STR), "MismatchingTypes"),
    ("union-literal-to-plain", b_union(b_int(1), INT), INT, None),
    ("none-literal-to-optional", b_none(), union(INT, NONE), None),
    ("none-literal-to-required", b_none(), INT, "MismatchingTypes"),
]


@pytest.mark.parametrize("binding,down,code", [c[1:] for c in LITERALS], ids=[c[0] for c in LITERALS])
def test_literal_binding(binding, down, code) -> None:
    wf = workflow([task_node("b", "consumer", {"x": binding})])
    codes = _compile_codes(wf, [task("consumer", inputs={"x": down})])
    assert codes == ({code} if code else set())


def test_unbound_optional_input_is_allowed() -> None:
    wf = workflow([task_node("b", "consumer", {})])
    assert _compile_codes(wf, [task("consumer", inputs={"x": union(INT, NONE)})]) == set()


def test_unbound_required_input() -> None:
    wf = workflow([task_node("b", "consumer", {})])
    assert _compile_codes(wf, [task("consumer", inputs={"x": INT})]) == {"ParameterNotBound"}


def test_indexed_output_reference() -> None:
    wf = workflow([task_node("a", "producer"), task_node("b", "consumer", {"x": promise("a", "[1].o")})])
    tasks = [task("producer", outputs={"o": lst(INT)}), task("consumer", inputs={"x": INT})]
    assert _compile_codes(wf, tasks) == set()
    tasks = [task("producer", outputs={"o": INT}), task("consumer", inputs={"x": INT})]
    assert _compile_codes(wf, tasks) == {"MismatchingTypes"}


def test_promise_in_list_binding_creates_edge() -> None:
    wf = workflow([task_node("a", "producer"), task_node("b", "consumer", {"x": b_list(promise("a", "o"))})])
    closure = compile_workflow(wf, [], [task("producer", outputs={"o": INT}), task("consumer", inputs={"x": lst(INT)})], [])
    assert list(closure.primary.connections.upstream["b"].ids) == ["a"]
