"""Canonical forms of workflow specs, for deciding whether two registrations say the same thing (pure).

flytekit builds some lists from Python sets -- a node's upstream nodes (``list(set(nodes))``, also for
nodes inside branches) -- so the same program serializes them in a different order in each process, and
the order of ``sub_workflows`` follows their serialized text. The canonical form sorts exactly the lists
Flyte treats as sets: ``upstream_node_ids`` at every nesting level (workflow nodes, failure node, branch
arms, nested branches, array node sub-nodes, subworkflow templates), an array node's ``bound_inputs``,
and the subworkflow templates of a spec (looked up by id). Everything whose order means something --
branch cases, nodes, bindings, outputs -- is left alone. Never mutates its input.
"""

from __future__ import annotations

from collections.abc import Iterable

from flyteidl.core import workflow_pb2


def canonical_template(template: workflow_pb2.WorkflowTemplate) -> workflow_pb2.WorkflowTemplate:
    """A copy of a workflow template with its order-free lists sorted, at every nesting level."""
    out = workflow_pb2.WorkflowTemplate()
    out.CopyFrom(template)
    for node in out.nodes:
        _canonical_node(node)
    if out.HasField("failure_node"):
        _canonical_node(out.failure_node)
    return out


def canonical_workflow(template: workflow_pb2.WorkflowTemplate,
                       subworkflows: Iterable[workflow_pb2.WorkflowTemplate]) -> list[workflow_pb2.WorkflowTemplate]:
    """The primary template then the subworkflow templates, each canonical, subworkflows sorted by id."""
    subs = [canonical_template(sub) for sub in subworkflows]
    subs.sort(key=lambda sub: (sub.id.SerializeToString(deterministic=True), sub.SerializeToString(deterministic=True)))
    return [canonical_template(template), *subs]


def _canonical_node(node: workflow_pb2.Node) -> None:
    _sort_in_place(node.upstream_node_ids)
    kind = node.WhichOneof("target")
    if kind == "branch_node":
        if not node.branch_node.HasField("if_else"):
            return
        if_else = node.branch_node.if_else
        # The cases stay in order (the first true condition wins); only the nodes inside them change.
        blocks = ([if_else.case] if if_else.HasField("case") else []) + list(if_else.other)
        for block in blocks:
            if block.HasField("then_node"):
                _canonical_node(block.then_node)
        if if_else.HasField("else_node"):
            _canonical_node(if_else.else_node)
    elif kind == "array_node":
        _sort_in_place(node.array_node.bound_inputs)
        if node.array_node.HasField("node"):
            _canonical_node(node.array_node.node)


def _sort_in_place(values) -> None:
    ordered = sorted(values)
    if ordered != list(values):
        del values[:]
        values.extend(ordered)
