"""Node interfaces: what each kind of node takes as inputs and produces as outputs.

A task node has its task's interface; a subworkflow node the subworkflow's; a launch-plan node the
plan's required inputs (plus defaulted ones the node overrides) and its outputs; an approve gate
passes its bound inputs through; a signal gate outputs one variable of the signal's type; a sleep
gate has none; an array node has its sub-node's interface (mapped into lists when the sub-node
kept its own); a branch node's outputs are those common to all its arms (see branch.py).
"""

from __future__ import annotations

from flyteidl.core import identifier_pb2, interface_pb2, types_pb2

from flytelite.compiler import errors as E
from flytelite.compiler.builder import NodeBuilder, WorkflowBuilder, id_key, id_str

TypedInterface = interface_pb2.TypedInterface
VariableMap = interface_pb2.VariableMap


def empty_interface() -> TypedInterface:
    iface = TypedInterface()
    iface.inputs.SetInParent()
    iface.outputs.SetInParent()
    return iface


def _validate_variables(node_id: str, params: VariableMap, errs: E.Errors) -> None:
    for name, var in params.variables.items():
        if not name:
            errs.add(E.VALUE_REQUIRED, node_id, "A variable has an empty name.")
        if not var.HasField("type"):
            errs.add(E.VALUE_REQUIRED, node_id, f"Variable [{name}] has no type.")


def validate_interface(node_id: str, iface: TypedInterface | None, errs: E.Errors) -> TypedInterface:
    """Check every variable has a name and a type; missing inputs/outputs become empty maps (in place)."""
    if iface is None:
        iface = TypedInterface()
    for side in ("inputs", "outputs"):
        if iface.HasField(side):
            _validate_variables(node_id, getattr(iface, side), errs)
        else:
            getattr(iface, side).SetInParent()
    return iface


def _launch_plan_interface(w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors) -> TypedInterface | None:
    ref = n.node.workflow_node.launchplan_ref
    lp = w.get_launch_plan(ref)
    if lp is None:
        errs.add(
            E.WORKFLOW_REFERENCE_NOT_FOUND,
            n.id,
            f"Launch plan [{id_str(ref)}] is not among the launch plans provided.",
        )
        return None
    if lp.expected_inputs is None:
        errs.add(E.VALUE_REQUIRED, n.id, f"Launch plan [{id_str(ref)}] has no expected inputs.")
    if lp.expected_outputs is None:
        errs.add(E.VALUE_REQUIRED, n.id, f"Launch plan [{id_str(ref)}] has no expected outputs.")
    bound = {b.var for b in n.node.inputs}
    iface = TypedInterface()
    iface.inputs.SetInParent()
    if lp.expected_inputs is not None:
        # Required inputs must be bound; defaulted ones only count when the node overrides them.
        for name, param in lp.expected_inputs.parameters.items():
            if param.required or name in bound:
                iface.inputs.variables[name].CopyFrom(param.var)
    if lp.expected_outputs is not None:
        iface.outputs.CopyFrom(lp.expected_outputs)
    return iface


def _workflow_node_interface(w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors) -> TypedInterface | None:
    wn = n.node.workflow_node
    if wn.HasField("launchplan_ref") and id_key(wn.launchplan_ref) == id_key(w.template.id):
        # A workflow launching itself through its own launch plan.
        return w.template.interface if w.template.HasField("interface") else None
    if wn.HasField("launchplan_ref"):
        return _launch_plan_interface(w, n, errs)
    if wn.HasField("sub_workflow_ref"):
        sub = w.get_subworkflow(wn.sub_workflow_ref)
        if sub is None:
            errs.add(
                E.WORKFLOW_REFERENCE_NOT_FOUND,
                n.id,
                f"Subworkflow [{id_str(wn.sub_workflow_ref)}] is not among the workflows provided.",
            )
            return None
        if not sub.template.HasField("interface"):
            errs.add(E.VALUE_REQUIRED, n.id, f"Subworkflow [{id_str(wn.sub_workflow_ref)}] has no interface.")
            return None
        return sub.template.interface
    errs.add(
        E.WORKFLOW_REFERENCE_NOT_FOUND, n.id, "The workflow node references neither a launch plan nor a subworkflow."
    )
    return None


def _gate_interface(w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors) -> TypedInterface | None:
    from flytelite.compiler.bindings import EdgeDirection, validate_bindings

    gate = n.node.gate_node
    cond = gate.WhichOneof("condition")
    if cond == "approve":
        # Approving copies the inputs to the outputs, so both are whatever the node's bindings carry.
        resolved, _ = validate_bindings(
            w, n, n.node.inputs, VariableMap(), False, EdgeDirection.UPSTREAM, errs.scope()
        )
        iface = TypedInterface()
        iface.inputs.CopyFrom(resolved)
        iface.outputs.CopyFrom(resolved)
        return iface
    if cond == "signal":
        sig = gate.signal
        if not sig.HasField("type"):
            errs.add(E.VALUE_REQUIRED, n.id, f"Signal [{sig.signal_id}] has no type.")
            return None
        if not sig.output_variable_name:
            errs.add(E.VALUE_REQUIRED, n.id, f"Signal [{sig.signal_id}] has no output variable name.")
            return None
        iface = empty_interface()
        iface.outputs.variables[sig.output_variable_name].type.CopyFrom(sig.type)
        return iface
    if cond == "sleep":
        return empty_interface()
    errs.add(E.NO_CONDITION_FOUND, n.id, "The gate node has no condition: set approve, signal or sleep.")
    return None


def _mapped_interface(iface: TypedInterface, bound: set[str]) -> TypedInterface:
    """The interface of an array node over a node that kept its own (flytekit's is_original_sub_node_interface, set
    when it maps a launch plan): each input not bound whole and each output becomes a list of it. Flyte 1.16's
    compiler ignores the flag and refuses such nodes for their inputs' types."""
    mapped = TypedInterface()
    mapped.CopyFrom(iface)
    for variables, keep in ((mapped.inputs.variables, bound), (mapped.outputs.variables, set())):
        for name, var in variables.items():
            if name not in keep:
                item = types_pb2.LiteralType()
                item.CopyFrom(var.type)
                var.type.Clear()
                var.type.collection_type.CopyFrom(item)
    return mapped


def validate_underlying_interface(w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors) -> TypedInterface | None:
    """Compute (once) and return the node's interface, or None when it cannot be determined."""
    if n.interface is not None:
        return n.interface
    iface: TypedInterface | None = None
    kind = n.kind
    if kind == "task_node":
        tn = n.node.task_node
        if not tn.HasField("reference_id"):
            errs.add(E.VALUE_REQUIRED, n.id, "The task node has no task reference_id.")
        else:
            task = w.get_task(tn.reference_id)
            if task is None:
                errs.add(E.TASK_REFERENCE_NOT_FOUND, n.id, task_not_found_message(tn.reference_id))
            elif task.HasField("interface"):
                iface = task.interface
            else:
                iface = empty_interface()
    elif kind == "workflow_node":
        iface = _workflow_node_interface(w, n, errs.scope())
    elif kind == "branch_node":
        from flytelite.compiler.branch import validate_branch_interface

        iface = validate_branch_interface(w, n, errs.scope())
    elif kind == "gate_node":
        iface = _gate_interface(w, n, errs)
    elif kind == "array_node":
        array = n.node.array_node
        sub = n.child(("array",), array.node)
        # For map tasks flytekit already wraps the sub-node's variables in lists where needed.
        iface = validate_underlying_interface(w, sub, errs.scope())
        if iface is not None and array.is_original_sub_node_interface.value:
            iface = _mapped_interface(iface, set(array.bound_inputs))
    else:
        errs.add(E.VALUE_REQUIRED, n.id, "The node has no target: it must be a task, workflow, branch, gate or array node.")
    if iface is not None:
        validate_interface(n.id, iface, errs.scope())
    if errs.ok:
        n.interface = iface
    return iface if errs.ok else None


def task_not_found_message(ident: identifier_pb2.Identifier) -> str:
    return f"Task [{id_str(ident)}] is not among the tasks provided (was it registered?)."


def effective_outputs(n: NodeBuilder, errs: E.Errors) -> VariableMap | None:
    """The node's outputs after applying its output aliases (None when its interface is unknown)."""
    aliases: dict[str, str] = {}
    for output_alias in n.node.output_aliases:
        if output_alias.var in aliases:
            errs.add(E.DUPLICATE_ALIAS, n.id,
                     f"Output [{output_alias.var}] is aliased more than once (as [{output_alias.alias}]).")
        else:
            aliases[output_alias.var] = output_alias.alias
    if n.interface is None:
        return None
    out = VariableMap()
    for name, var in n.interface.outputs.variables.items():
        if name in aliases:
            out.variables[aliases.pop(name)].CopyFrom(var)
        else:
            out.variables[name].CopyFrom(var)
    for var_name, alias in aliases.items():
        errs.add(E.PARAMETER_NOT_BOUND, n.id, f"Alias [{alias}] renames output [{var_name}], which does not exist.")
    return out


def validate_output_var(n: NodeBuilder, name: str, errs: E.Errors) -> interface_pb2.Variable | None:
    outputs = effective_outputs(n, errs.scope())
    if not errs.ok:
        return None
    if outputs is None or name not in outputs.variables:
        known = ", ".join(sorted(outputs.variables)) if outputs is not None else "unknown"
        errs.add(E.VARIABLE_NAME_NOT_FOUND, n.id, f"Node [{n.id}] has no output [{name}] (its outputs: {known or 'none'}).")
        return None
    return outputs.variables[name]


def validate_input_var(
    n: NodeBuilder, name: str, require_type: bool, errs: E.Errors
) -> tuple[interface_pb2.Variable | None, bool]:
    """Look up an input variable of a node: (variable, found)."""
    if n.interface is None:
        return None, False
    if name in n.interface.inputs.variables:
        return n.interface.inputs.variables[name], True
    if not require_type and any(b.var == name for b in n.node.inputs):
        return None, False
    errs.add(E.VARIABLE_NAME_NOT_FOUND, n.id, f"Node [{n.id}] has no input [{name}].")
    return None, False
