"""Branch nodes: if / elif / else arms, their conditions and the interface they expose.

Each arm's node is renamed ``<branch id>-<arm id>`` (recursively for nested branches), as Flyte does,
so arm ids are unique in the workflow. A branch's inputs are whatever its bindings provide (the
variables its conditions compare); its outputs are the outputs common to all arms, which must have
identical types. A branch needs an ``else`` node or an ``error`` to fail with.
"""

from __future__ import annotations

from flyteidl.core import condition_pb2, interface_pb2, types_pb2, workflow_pb2

from flytelite.compiler import errors as E
from flytelite.compiler.bindings import EdgeDirection, validate_bindings
from flytelite.compiler.builder import NodeBuilder, WorkflowBuilder
from flytelite.compiler.interface import validate_input_var, validate_underlying_interface
from flytelite.compiler.literals import literal_type_for_primitive
from flytelite.compiler.types import type_to_str


def arm_builders(n: NodeBuilder, errs: E.Errors | None = None) -> list[NodeBuilder]:
    """Builders for the arms' nodes in order: if, each elif, else (missing then-nodes are skipped)."""
    if_else = n.node.branch_node.if_else
    arms: list[NodeBuilder] = []
    if if_else.HasField("case") and if_else.case.HasField("then_node"):
        arms.append(n.child(("case",), if_else.case.then_node))
    for i, other in enumerate(if_else.other):
        if other.HasField("then_node"):
            arms.append(n.child(("other", i), other.then_node))
        elif errs is not None:
            errs.add(E.VALUE_REQUIRED, n.id, f"Branch arm #{i + 2} (elif) has no node to run.")
    if if_else.HasField("else_node"):
        arms.append(n.child(("else",), if_else.else_node))
    return arms


def validate_branch_interface(
    w: WorkflowBuilder, n: NodeBuilder, errs: E.Errors
) -> interface_pb2.TypedInterface | None:
    if n.interface is not None:
        return n.interface
    if_else = n.node.branch_node.if_else
    if not n.node.branch_node.HasField("if_else"):
        errs.add(E.VALUE_REQUIRED, n.id, "The branch node has no if/else block.")
        return None
    if not if_else.HasField("case"):
        errs.add(E.VALUE_REQUIRED, n.id, "The branch node has no first (if) case.")
        return None
    if not if_else.case.HasField("then_node"):
        errs.add(E.VALUE_REQUIRED, n.id, "The first (if) case of the branch has no node to run.")
        return None

    outputs: dict[str, interface_pb2.Variable] | None = None
    common: set[str] = set()
    for arm in arm_builders(n, errs):
        if not arm.renamed:
            arm.id = f"{n.id}-{arm.id}"
            arm.renamed = True
        arm_iface = validate_underlying_interface(w, arm, errs.scope())
        if arm_iface is None:
            continue
        arm_outputs = arm_iface.outputs.variables
        if outputs is None:
            outputs = {k: v for k, v in arm_outputs.items()}
            common = set(outputs)
            continue
        # Outputs present in every arm must have the same type in every arm.
        common &= set(arm_outputs)
        for name in sorted(common):
            if outputs[name].type != arm_outputs[name].type:
                errs.add(
                    E.MISMATCHING_TYPES,
                    arm.id,
                    f"Branch output [{name}] has type [{type_to_str(arm_outputs[name].type)}] in this arm but "
                    f"[{type_to_str(outputs[name].type)}] in the first arm; all arms must agree.",
                )

    # The branch's inputs are what its bindings provide; conditions are checked against them later.
    inputs, _ = validate_bindings(
        w, n, n.node.inputs, interface_pb2.VariableMap(), False, EdgeDirection.UPSTREAM, errs.scope()
    )
    if not errs.ok or outputs is None:
        return None
    iface = interface_pb2.TypedInterface()
    iface.inputs.CopyFrom(inputs)
    iface.outputs.SetInParent()
    for name in common:
        iface.outputs.variables[name].CopyFrom(outputs[name])
    return iface


def _operand_type(
    n: NodeBuilder, side: str, operand: condition_pb2.Operand | None, require_type: bool, errs: E.Errors
) -> types_pb2.LiteralType | None:
    if operand is None:
        errs.add(E.VALUE_REQUIRED, n.id, f"A comparison in the branch has no {side} operand.")
        return None
    kind = operand.WhichOneof("val")
    if kind == "primitive":
        return literal_type_for_primitive(operand.primitive)
    if kind == "var" and operand.var:
        if n.interface is None:
            errs.add(E.VALUE_REQUIRED, n.id, f"The condition uses [{operand.var}] but the branch inputs are unknown.")
            return None
        var, found = validate_input_var(n, operand.var, require_type, errs.scope())
        return var.type if found and var is not None else None
    if kind == "scalar":
        # flytekit sends scalars only for "is None" checks; Flyte's compiler predates them, we accept
        # them without a type comparison (the engine evaluates them at run time).
        return None
    errs.add(E.VALUE_REQUIRED, n.id, f"The {side} operand of a comparison has no value.")
    return None


def validate_boolean_expression(
    n: NodeBuilder, expr: condition_pb2.BooleanExpression | None, require_type: bool, errs: E.Errors
) -> bool:
    if expr is None:
        errs.add(E.BRANCH_NODE_HAS_NO_CONDITION, n.id, "A branch case has no condition.")
        return errs.ok
    kind = expr.WhichOneof("expr")
    if kind == "comparison":
        cmp = expr.comparison
        right_scope, left_scope = errs.scope(), errs.scope()
        right = _operand_type(n, "right", cmp.right_value if cmp.HasField("right_value") else None, require_type, right_scope)
        left = _operand_type(n, "left", cmp.left_value if cmp.HasField("left_value") else None, require_type, left_scope)
        if right_scope.ok and left_scope.ok and right is not None and left is not None and right != left:
            errs.add(
                E.MISMATCHING_TYPES,
                n.id,
                f"The condition compares a [{type_to_str(left)}] with a [{type_to_str(right)}]; "
                "both sides must have the same type.",
            )
    elif kind == "conjunction":
        conj = expr.conjunction
        validate_boolean_expression(
            n, conj.left_expression if conj.HasField("left_expression") else None, require_type, errs.scope()
        )
        validate_boolean_expression(
            n, conj.right_expression if conj.HasField("right_expression") else None, require_type, errs.scope()
        )
    else:
        errs.add(E.VALUE_REQUIRED, n.id, "A branch condition is empty: it must be a comparison or a conjunction.")
    return errs.ok


def validate_branch_node(
    w: WorkflowBuilder, n: NodeBuilder, require_type: bool, errs: E.Errors
) -> tuple[list[NodeBuilder], bool]:
    """Check the conditions and arms of a branch; returns the arms' builders that validated."""
    from flytelite.compiler.nodes import validate_node

    if_else = n.node.branch_node.if_else
    blocks: list[tuple[tuple, workflow_pb2.IfBlock]] = []
    if not if_else.HasField("case"):
        errs.add(E.BRANCH_NODE_HAS_NO_CONDITION, n.id, "The branch has no first (if) case.")
    else:
        blocks.append((("case",), if_else.case))
    blocks.extend((("other", i), block) for i, block in enumerate(if_else.other))
    arms: list[NodeBuilder] = []
    for key, block in blocks:
        validate_boolean_expression(
            n, block.condition if block.HasField("condition") else None, require_type, errs.scope()
        )
        if not block.HasField("then_node"):
            errs.add(E.BRANCH_NODE_ID_NOT_FOUND, n.id, "A branch case has no node to run when its condition holds.")
        else:
            arms.append(n.child(key, block.then_node))
    if if_else.HasField("else_node"):
        arms.append(n.child(("else",), if_else.else_node))
    elif not if_else.HasField("error"):
        errs.add(
            E.BRANCH_NODE_HAS_NO_DEFAULT,
            n.id,
            "The branch has neither an else node nor an error: add an else, or fail explicitly.",
        )
    validated = [arm for arm in arms if validate_node(w, arm, require_type, errs.scope())]
    return validated, errs.ok
