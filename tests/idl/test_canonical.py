"""The canonical form of workflow specs: set-like lists sorted at every depth, ordered lists kept."""

from __future__ import annotations

from flyteidl.core import condition_pb2, identifier_pb2, workflow_pb2

from flytelite.idl.canonical import canonical_template, canonical_workflow


def _node(node_id: str, *upstream: str) -> workflow_pb2.Node:
    return workflow_pb2.Node(id=node_id, upstream_node_ids=list(upstream))


def _case(var: str, then: workflow_pb2.Node) -> workflow_pb2.IfBlock:
    condition = condition_pb2.BooleanExpression(comparison=condition_pb2.ComparisonExpression(
        left_value=condition_pb2.Operand(var=var), right_value=condition_pb2.Operand(var=var)))
    return workflow_pb2.IfBlock(condition=condition, then_node=then)


def _branch(node_id: str, upstream: list[str], cases: list[workflow_pb2.IfBlock],
            else_node: workflow_pb2.Node) -> workflow_pb2.Node:
    if_else = workflow_pb2.IfElseBlock(case=cases[0], other=cases[1:], else_node=else_node)
    return workflow_pb2.Node(id=node_id, upstream_node_ids=upstream,
                             branch_node=workflow_pb2.BranchNode(if_else=if_else))


def _template(name: str, upstream_order: int) -> workflow_pb2.WorkflowTemplate:
    """The same workflow whatever ``upstream_order``; only the order of its upstream lists changes."""
    def ids(*names: str) -> list[str]:
        return sorted(names, reverse=bool(upstream_order))

    nested = _branch("n0", ids("n0", "n1"), [_case("a", _node("n0", *ids("n0", "n1")))], _node("n1", *ids("n1", "n0")))
    outer = _branch("n2", ids("n1", "n0"), [_case("x", nested), _case("y", _node("n1", *ids("n0", "n1", "n2")))],
                    _node("n2", *ids("n0", "n1")))
    mapped = workflow_pb2.Node(id="n3", upstream_node_ids=ids("n2", "n0"), array_node=workflow_pb2.ArrayNode(
        node=_node("n3-0", *ids("a", "b")), bound_inputs=ids("y", "x")))
    return workflow_pb2.WorkflowTemplate(
        id=identifier_pb2.Identifier(resource_type=identifier_pb2.WORKFLOW, name=name, version="v1"),
        nodes=[_node("n1"), _node("n0"), outer, mapped],
        failure_node=_node("fn", *ids("n0", "n3")),
    )


def test_orders_of_set_like_lists_do_not_count_at_any_depth():
    first, second = _template("wf", 0), _template("wf", 1)
    assert first != second
    assert canonical_template(first) == canonical_template(second)


def test_canonical_form_sorts_and_keeps_meaningful_order():
    original = _template("wf", 1)
    snapshot = original.SerializeToString(deterministic=True)
    canon = canonical_template(original)
    assert original.SerializeToString(deterministic=True) == snapshot  # the input is left alone

    assert [n.id for n in canon.nodes] == ["n1", "n0", "n2", "n3"]
    if_else = canon.nodes[2].branch_node.if_else
    assert list(canon.nodes[2].upstream_node_ids) == ["n0", "n1"]
    assert [c.condition.comparison.left_value.var for c in [if_else.case, *if_else.other]] == ["x", "y"]
    assert list(if_else.case.then_node.branch_node.if_else.case.then_node.upstream_node_ids) == ["n0", "n1"]
    assert list(if_else.other[0].then_node.upstream_node_ids) == ["n0", "n1", "n2"]
    assert list(if_else.else_node.upstream_node_ids) == ["n0", "n1"]
    assert list(canon.nodes[3].array_node.node.upstream_node_ids) == ["a", "b"]
    assert list(canon.nodes[3].array_node.bound_inputs) == ["x", "y"]
    assert list(canon.failure_node.upstream_node_ids) == ["n0", "n3"]
    # Unset parts stay unset.
    assert not canon.nodes[0].HasField("branch_node") and not canon.HasField("metadata")


def test_subworkflows_are_compared_as_a_set_keyed_by_id():
    primary, sub_a, sub_b = _template("wf", 0), _template("sub_a", 1), _template("sub_b", 0)
    one = canonical_workflow(primary, [sub_b, sub_a])
    other = canonical_workflow(_template("wf", 1), [_template("sub_a", 0), _template("sub_b", 1)])
    assert one == other
    assert [t.id.name for t in one] == ["wf", "sub_a", "sub_b"]
    changed = _template("sub_a", 0)
    changed.nodes[0].upstream_node_ids.append("n9")
    assert canonical_workflow(primary, [sub_b, changed]) != one
