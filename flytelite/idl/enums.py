"""Names of protobuf enum values that may be unknown, and plain numbers as enum values (pure).

proto3 enums are open: a request may carry any number (`resource_type = 999`), and
`EnumTypeWrapper.Name` raises ValueError for one it does not define. Messages name
such a value by its number instead.
"""

from __future__ import annotations

from typing import TypeVar, cast

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

E = TypeVar("E", bound=int)


def as_enum(enum: type[E], number: int) -> E:
    """`number` as a value of `enum` (say `execution_pb2.NodeExecution.Phase`), for a message field.

    flytelite keeps enum values as plain ints inside (statuses, rows); flyteidl's stubs type each enum
    as a class of its own, while at run time any int is one of its values (proto3 enums are open).
    """
    return cast(E, number)


def enum_name(enum: EnumTypeWrapper, number: int) -> str:
    """The value's name, or `999 (not a <Enum> value)` for a number the enum does not define."""
    value = enum.DESCRIPTOR.values_by_number.get(number)
    return value.name if value is not None else f"{number} (not a {enum.DESCRIPTOR.name} value)"

