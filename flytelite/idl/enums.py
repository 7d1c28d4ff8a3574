"""Names of protobuf enum values that may be unknown (pure).

proto3 enums are open: a request may carry any number (`resource_type = 999`), and
`EnumTypeWrapper.Name` raises ValueError for one it does not define. Messages name
such a value by its number instead.
"""

from __future__ import annotations

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper


def enum_name(enum: EnumTypeWrapper, number: int) -> str:
    """The value's name, or `999 (not a <Enum> value)` for a number the enum does not define."""
    value = enum.DESCRIPTOR.values_by_number.get(number)
    return value.name if value is not None else f"{number} (not a {enum.DESCRIPTOR.name} value)"

