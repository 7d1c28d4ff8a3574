"""Node validation: resolve what a node runs, check its interface, and wire its edges.

``validate_node`` resolves the node's interface and target (task, subworkflow -- compiled on first
use --, branch arms), checks output aliases and sorts ``upstream_node_ids`` for stable output.
``add_edges`` then records explicit and data (binding) dependencies in the workflow graph.
"""

from __future__ import annotations

from flytelite.compiler import errors as E
from flytelite.compiler.bindings import EdgeDirection, validate_bindings
from flytelite.compiler.builder import NodeBuilder, WorkflowBuilder, id_key, id_str
from flytelite.compiler.interface import (
    effective_outputs,
    task_not_found_message,
    validate_underlying_interface,
)
from flytelite.idl.ids import END_NODE, START_NODE


def validate_node(w: WorkflowBuilder, n: NodeBuilder, check_condition_types: bool, errs: E.Errors) -> bool:
    if not n.id:
        errs.add(E.VALUE_REQUIRED, "<node>", "A node has no id; every node needs a unique id.")
    if n.id in (START_NODE, END_NODE):
        return True
    if validate_underlying_interface(w, n, errs.scope()) is not None:
        effective_outputs(n, errs.scope())
    # Clients may list upstream ids in any order; sort so the compiled output does not depend on it.
    ids = sorted(n.node.upstream_node_ids)
    del n.node.upstream_node_ids[:]
    n.node.upstream_node_ids.extend(ids)

    kind = n.kind
    if kind == "branch_node":
        from flytelite.compiler.branch import validate_branch_node

        arms, ok = validate_branch_node(w, n, check_condition_types, errs.scope())
        if ok:
            for arm in arms:
                # Arms only record where their inputs come from; they are not steps of the outer graph.
                add_edges(w, arm, EdgeDirection.UPSTREAM, errs.scope())
    elif kind == "workflow_node" and n.node.workflow_node.HasField("sub_workflow_ref"):
        _compile_subworkflow(w, n, errs)
    elif kind == "array_node" and n.node.array_node.node.workflow_node.HasField("sub_workflow_ref"):
        _compile_subworkflow(w, n.child(("array",), n.node.array_node.node), errs)
    elif kind == "task_node" and n.node.task_node.HasField("reference_id"):
        task = w.get_task(n.node.task_node.reference_id)
        if task is not None:
            n.task = task
        else:
            errs.add(E.TASK_REFERENCE_NOT_FOUND, n.id, task_not_found_message(n.node.task_node.reference_id))
    return errs.ok


def _compile_subworkflow(w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors) -> None:
    from flytelite.compiler.workflow import validate_workflow

    ref = n.node.workflow_node.sub_workflow_ref
    key = id_key(ref)
    if key in w.index.compiled_subworkflows:
        n.subworkflow = w.index.compiled_subworkflows[key]
        return
    sub = w.get_subworkflow(ref)
    if sub is None:
        errs.add(
            E.WORKFLOW_REFERENCE_NOT_FOUND,
            n.id,
            f"Subworkflow [{id_str(ref)}] is not among the workflows provided.",
        )
        return
    if key in w.index.compiling:
        errs.add(E.CYCLE_DETECTED, n.id, f"Subworkflow [{id_str(ref)}] (directly or not) runs itself.")
        return
    w.index.compiling.add(key)
    try:
        if validate_workflow(w.index, sub, errs.scope()) is not None:
            n.subworkflow = sub
            w.index.compiled_subworkflows[key] = sub
    finally:
        w.index.compiling.discard(key)


def add_edges(w: WorkflowBuilder, n: NodeBuilder, direction: EdgeDirection, errs: E.Errors) -> bool:
    """Record the node's explicit (upstream_node_ids) and implicit (binding) dependencies."""
    if n.interface is None:
        # Its interface could not be computed; that was reported already.
        return False
    if direction in (EdgeDirection.DOWNSTREAM, EdgeDirection.BIDIRECTIONAL):
        for up in n.node.upstream_node_ids:
            if up not in w.nodes:
                errs.add(
                    E.NODE_REFERENCE_NOT_FOUND,
                    n.id,
                    f"upstream_node_ids lists [{up}], which is not a node of this workflow.",
                )
                continue
            w.graph.add_execution_edge(up, n.id)
    _, ok = validate_bindings(w, n, n.node.inputs, n.interface.inputs, True, direction, errs.scope())
    return ok
