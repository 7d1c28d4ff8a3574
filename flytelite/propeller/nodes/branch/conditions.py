"""Evaluating a branch node's conditions (FlytePropeller's branch/evaluator.go and comparator.go).

Operands are primitives, scalars (flytekit's `is_none()` compares with a none scalar) or variables
naming the branch node's inputs. Primitives compare by type: integers, floats, strings, datetimes
and durations with every operator, booleans only with == and !=. An input wrapped in a union
(Optional[...]) is compared by the value it holds; None equals only None. Pure: no I/O.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from flyteidl.core import condition_pb2, literals_pb2, workflow_pb2

from flytelite.idl.error_kinds import USER

USER_PROVIDED_ERROR = "UserProvidedError"
MALFORMED_BRANCH = "MalformedBranchUserError"

Op = condition_pb2.ComparisonExpression
_ORDERED = {Op.GT: operator.gt, Op.GTE: operator.ge, Op.LT: operator.lt, Op.LTE: operator.le}
_OP_NAMES = {Op.GT: "GT", Op.GTE: "GTE", Op.LT: "LT", Op.LTE: "LTE", Op.EQ: "EQ", Op.NEQ: "NEQ"}


class BranchError(Exception):
    """Why a branch could not choose an arm; str() reads like flytestdlib's '[code] message'."""

    def __init__(self, code: str, message: str, kind: int = USER):
        super().__init__(message)
        self.code, self.message, self.kind = code, message, kind

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass
class Decision:
    taken: str | None = None
    skipped: list[str] = field(default_factory=list)
    error: BranchError | None = None


def decide_branch(branch: workflow_pb2.BranchNode, inputs: literals_pb2.LiteralMap) -> Decision:
    """The arm to run and the arms skipped (DecideBranch); error set when no arm can run."""
    if_else = branch.if_else
    decision = Decision()
    try:
        for block in (if_else.case, *if_else.other):
            if decision.taken is None and evaluate(block.condition, inputs):
                decision.taken = block.then_node.id
            else:
                decision.skipped.append(block.then_node.id)
    except BranchError as e:
        return Decision(error=e)
    if if_else.HasField("else_node"):
        if decision.taken is None:
            decision.taken = if_else.else_node.id
        else:
            decision.skipped.append(if_else.else_node.id)
    if decision.taken is None:
        if if_else.HasField("error"):
            decision.error = BranchError(USER_PROVIDED_ERROR, if_else.error.message)
        else:
            decision.error = BranchError(MALFORMED_BRANCH, "No branch satisfied")
    return decision


def evaluate(expr: condition_pb2.BooleanExpression, inputs: literals_pb2.LiteralMap) -> bool:
    kind = expr.WhichOneof("expr")
    if kind == "comparison":
        return compare(expr.comparison, inputs)
    if kind != "conjunction":
        raise BranchError(MALFORMED_BRANCH, "No Comparison or Conjunction found in Branch node expression.")
    conj = expr.conjunction
    left = evaluate(conj.left_expression, inputs)
    right = evaluate(conj.right_expression, inputs)
    if conj.operator == condition_pb2.ConjunctionExpression.OR:
        return left or right
    return left and right


def compare(expr: condition_pb2.ComparisonExpression, inputs: literals_pb2.LiteralMap) -> bool:
    left, right = _operand(expr.left_value, inputs), _operand(expr.right_value, inputs)
    op = expr.operator
    if _is_none(left) or _is_none(right):
        if op not in (Op.EQ, Op.NEQ):
            raise BranchError(MALFORMED_BRANCH, f"[{_OP_NAMES.get(op, op)}] not defined for None operands.")
        same = _is_none(left) and _is_none(right)
        return same if op == Op.EQ else not same
    lp, rp = _primitive(left, "LHS"), _primitive(right, "RHS")
    lkind, rkind = lp.WhichOneof("value"), rp.WhichOneof("value")
    if lkind != rkind:
        raise BranchError(MALFORMED_BRANCH, f"Comparison between different primitives types. "
                          f"lVal[{lkind}]:rVal[{rkind}]")
    lv, rv = _value(lp), _value(rp)
    if op == Op.EQ:
        return lv == rv
    if op == Op.NEQ:
        return lv != rv
    if op in _ORDERED:
        if lkind == "boolean":
            raise BranchError(MALFORMED_BRANCH, f"[{_OP_NAMES[op]}] not defined for boolean operands.")
        return _ORDERED[op](lv, rv)
    raise BranchError(MALFORMED_BRANCH, "Unsupported operator type in Propeller. System error.")


def _operand(operand: condition_pb2.Operand, inputs: literals_pb2.LiteralMap) -> literals_pb2.Literal:
    kind = operand.WhichOneof("val")
    if kind == "primitive":
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=operand.primitive))
    if kind == "scalar":
        return literals_pb2.Literal(scalar=operand.scalar)
    if kind == "var" and operand.var in inputs.literals:
        return _unwrap(inputs.literals[operand.var])
    raise BranchError(MALFORMED_BRANCH, f"Failed to find Value for Variable [{operand.var}]")


def _unwrap(literal: literals_pb2.Literal) -> literals_pb2.Literal:
    while literal.HasField("scalar") and literal.scalar.HasField("union"):
        literal = literal.scalar.union.value
    return literal


def _is_none(literal: literals_pb2.Literal) -> bool:
    return literal.HasField("scalar") and literal.scalar.HasField("none_type")


def _primitive(literal: literals_pb2.Literal, side: str) -> literals_pb2.Primitive:
    if not (literal.HasField("scalar") and literal.scalar.HasField("primitive")):
        raise BranchError(MALFORMED_BRANCH, f"Only primitives can be compared. {side} Variable is non primitive.")
    return literal.scalar.primitive


def _value(p: literals_pb2.Primitive):
    kind = p.WhichOneof("value")
    if kind in ("datetime", "duration"):
        # As Flyte: timestamps and durations compare by whole seconds.
        return getattr(p, kind).seconds
    return getattr(p, kind)
