"""Launch-plan input resolution: the inputs an execution runs with, from what the user sent.

FlyteAdmin's rules: every user input must be one the launch plan expects and of
its type; fixed inputs cannot be overridden; defaults fill gaps; a required
input nobody gave is an error. Type checks are the compiler's castability rules.
"""

from __future__ import annotations

from flyteidl.core import interface_pb2, literals_pb2

from flytelite.compiler.literals import literal_matches_type, literal_type_for_literal
from flytelite.compiler.types import type_to_str
from flytelite.errors import InvalidArgument


def resolve_inputs(
    user_inputs: literals_pb2.LiteralMap,
    fixed_inputs: literals_pb2.LiteralMap,
    expected_inputs: interface_pb2.ParameterMap,
    entity: str,
) -> literals_pb2.LiteralMap:
    """The full input map of an execution of `entity` (a launch plan description for messages)."""
    expected = expected_inputs.parameters
    resolved = literals_pb2.LiteralMap()
    for name in sorted(user_inputs.literals):
        literal = user_inputs.literals[name]
        if name in fixed_inputs.literals:
            raise InvalidArgument(f"input {name!r} is fixed by {entity} and cannot be overridden; "
                                  f"remove it from the execution's inputs")
        if name not in expected:
            known = ", ".join(sorted(expected)) or "none"
            raise InvalidArgument(f"{entity} has no input named {name!r} (its inputs: {known})")
        _check_type(name, literal, expected[name].var.type, entity)
        resolved.literals[name].CopyFrom(literal)
    missing = []
    for name in sorted(expected):
        if name in resolved.literals:
            continue
        param = expected[name]
        if param.required:
            missing.append(name)
        elif param.HasField("default"):
            resolved.literals[name].CopyFrom(param.default)
        else:
            # An optional parameter without a value (Flyte stores a nil default): run with none.
            resolved.literals[name].scalar.none_type.SetInParent()
    if missing:
        raise InvalidArgument(f"{entity} requires input(s) {', '.join(missing)} but the execution gives no value; "
                              f"pass them as inputs")
    for name, literal in fixed_inputs.literals.items():
        resolved.literals[name].CopyFrom(literal)
    return resolved


def _check_type(name: str, literal: literals_pb2.Literal, expected_type, entity: str) -> None:
    if literal_matches_type(literal, expected_type):
        return
    inferred = literal_type_for_literal(literal)
    got = type_to_str(inferred) if inferred is not None else "a value whose type cannot be told"
    raise InvalidArgument(f"input {name!r} of {entity} has the wrong type: expected "
                          f"{type_to_str(expected_type)}, got {got}")
