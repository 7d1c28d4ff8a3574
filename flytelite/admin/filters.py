"""FlyteAdmin list semantics: filter strings, sort order and offset tokens, applied to SQL queries.

Filters look like `eq(name,foo)+value_in(phase,RUNNING;SUCCEEDED)`; a field may
carry an entity prefix (`execution.phase`, `launch_plan.name`). Tokens are
offsets as strings, as FlyteAdmin does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flyteidl.admin import common_pb2
from sqlalchemy import Select, func
from sqlalchemy.orm import InstrumentedAttribute, Session

from flytelite.errors import InvalidArgument

MAX_LIMIT = 10_000
# Offsets are 64-bit integers in SQL (SQLite's INTEGER, PostgreSQL's bigint); a token stays well inside.
MAX_OFFSET = 2**62
_FILTER = re.compile(r"^\s*(\w+)\(([^,()]+),(.*)\)\s*$")
_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": lambda c, v: c == v,
    "ne": lambda c, v: c != v,
    "gt": lambda c, v: c > v,
    "gte": lambda c, v: c >= v,
    "lt": lambda c, v: c < v,
    "lte": lambda c, v: c <= v,
    "contains": lambda c, v: c.contains(v),
    "value_in": lambda c, v: c.in_(v),
    "value_not_in": lambda c, v: c.not_in(v),
}


@dataclass(frozen=True)
class Field:
    """A filterable/sortable field: its column and how to turn the filter's text into a value."""

    column: Any
    parse: Callable[[str], Any] = str


def enum_value(enum) -> Callable[[str], int]:
    """Parse a phase or state given by name (`SUCCEEDED`) or number (`4`)."""

    def parse(text: str) -> int:
        text = text.strip()
        if text.lstrip("-").isdigit():
            return integer(text)
        try:
            return enum.Value(text.upper())
        except ValueError:
            raise InvalidArgument(f"unknown value {text!r}; expected one of {', '.join(enum.keys())}") from None

    return parse


def parse_time(text: str) -> datetime:
    """A filter's time, in UTC (a time without a zone is UTC): SQLite compares stored UTC times as text."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"cannot read {text!r} as a time; use RFC 3339, e.g. 2024-01-31T12:00:00Z") from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def _split_filters(text: str) -> list[str]:
    """Split on the '+' between expressions, not inside their value lists."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "+" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def apply_filters(query: Select, text: str, fields: dict[str, Field]) -> Select:
    for expr in _split_filters(text or ""):
        match = _FILTER.match(expr)
        if not match:
            raise InvalidArgument(f"cannot parse filter {expr!r}; expected e.g. eq(name,my_workflow)")
        op, name, raw = match.group(1).lower(), match.group(2).strip(), match.group(3)
        query = query.where(condition(op, name, [v for v in raw.split(";") if v != ""]
                                      if op in ("value_in", "value_not_in") else [raw], fields))
    return query


def condition(op: str, name: str, values: list[str], fields: dict[str, Field]) -> Any:
    """The SQL condition of filter function `op` (eq, value_in, ...) on field `name` with `values` (one, but for
    value_in and value_not_in)."""
    if op not in _OPS:
        raise InvalidArgument(f"unknown filter function {op!r}; use one of {', '.join(_OPS)}")
    field = fields.get(name) or fields.get(name.split(".", 1)[-1])
    if field is None:
        raise InvalidArgument(f"cannot filter on {name!r}; filterable fields: {', '.join(sorted(fields))}")
    parsed = [_parse_value(field, name, v) for v in values]
    if op in ("value_in", "value_not_in"):
        return _OPS[op](field.column, parsed)
    if len(parsed) != 1:
        raise InvalidArgument(f"filter {op} on {name!r} takes one value, got {len(parsed)}")
    return _OPS[op](field.column, parsed[0])


def _parse_value(field: Field, name: str, text: str) -> Any:
    try:
        return field.parse(text)
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidArgument):
            raise
        raise InvalidArgument(f"filter on {name!r}: {text.strip()!r} is not a valid value ({exc})") from None


def integer(text: str) -> int:
    """An integer filter value (an attempt, an enum's number) that fits the database's 64-bit integers."""
    value = int(text)
    if abs(value) > 2**62:
        raise ValueError(f"{value} is beyond 2^62")
    return value


def number(text: str) -> float:
    """A numeric filter value (a duration in seconds): finite, within what the database compares."""
    value = float(text)
    if not math.isfinite(value) or abs(value) > 2**62:
        raise ValueError(f"{value} is not a finite number below 2^62")
    return value


def apply_sort(query: Select, sort_by: common_pb2.Sort | None, fields: dict[str, Field],
               default: InstrumentedAttribute) -> Select:
    if sort_by is not None and sort_by.key:
        field = fields.get(sort_by.key) or fields.get(sort_by.key.split(".", 1)[-1])
        if field is None:
            raise InvalidArgument(f"cannot sort by {sort_by.key!r}; sortable fields: {', '.join(sorted(fields))}")
        column = field.column
        asc = sort_by.direction == common_pb2.Sort.ASCENDING
    else:
        column, asc = default, False
    return query.order_by(column.asc() if asc else column.desc())


def page(session: Session, query: Select, limit: int, token: str,
         params: dict[str, Any] | None = None) -> tuple[list, str]:
    """One page of results and the token of the next page ('' when this is the last); `params`: the values of
    the query's bound parameters."""
    if limit < 0:
        raise InvalidArgument(f"limit must not be negative, got {limit}")
    limit = min(limit or 100, MAX_LIMIT)
    try:
        offset = int(token) if token else 0
    except ValueError:
        offset = -1
    if not 0 <= offset <= MAX_OFFSET:
        raise InvalidArgument(f"invalid pagination token {token!r}; pass the token a previous list returned "
                              "(an offset between 0 and 2^62)")
    rows = list(session.scalars(query.offset(offset).limit(limit + 1), params))
    more = len(rows) > limit
    return rows[:limit], str(offset + limit) if more else ""


def count(session: Session, query: Select) -> int:
    return session.scalar(query.with_only_columns(func.count()).order_by(None)) or 0
