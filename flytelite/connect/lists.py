"""Lists of Flyte 2 runs and actions (ListRuns, ListActions): flyteidl2's ListRequest (filters, sorts, a token
and a limit) applied to runs/store.py's queries, with FlyteAdmin's filter functions (admin/filters.py).

The `flyte` SDK filters runs by phase, task name and version, creator and time (`flyte get run --in-phase ...`,
`Run.listall`), and actions by phase, parent and time; filters on labels, and the string functions flyteidl2
added (ENDS_WITH, EXISTS, ...), answer UNIMPLEMENTED naming themselves.
"""

from __future__ import annotations

from flyteidl2.common import list_pb2, phase_pb2
from sqlalchemy import Select

from flytelite.admin.filters import Field, condition, parse_time
from flytelite.context import Context
from flytelite.errors import InvalidArgument, Unimplemented
from flytelite.runs import store
from flytelite.store.models import Action

Function = list_pb2.Filter.Function
_FUNCTIONS = {Function.EQUAL: "eq", Function.NOT_EQUAL: "ne", Function.GREATER_THAN: "gt",
              Function.GREATER_THAN_OR_EQUAL: "gte", Function.LESS_THAN: "lt", Function.LESS_THAN_OR_EQUAL: "lte",
              Function.CONTAINS: "contains", Function.VALUE_IN: "value_in", Function.VALUE_NOT_IN: "value_not_in"}
MAX_LIMIT = 1000


def _phase(text: str) -> int:
    """An ActionPhase by number (as the SDK sends it) or name, with or without its ACTION_PHASE_ prefix."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    name = text.upper() if text.upper().startswith("ACTION_PHASE_") else f"ACTION_PHASE_{text.upper()}"
    try:
        return phase_pb2.ActionPhase.Value(name)
    except ValueError:
        raise InvalidArgument(f"unknown phase {text!r}; expected one of "
                              f"{', '.join(phase_pb2.ActionPhase.keys())}") from None


_COMMON = {
    "phase": Field(Action.phase, _phase),
    "task_name": Field(Action.task_name),
    "task_version": Field(Action.task_version),
    "created_at": Field(Action.created_at, parse_time),
    "updated_at": Field(Action.updated_at, parse_time),
}
RUN_FIELDS = {**_COMMON, "name": Field(Action.run_name), "created_by": Field(Action.created_by)}
ACTION_FIELDS = {**_COMMON, "name": Field(Action.name), "parent_name": Field(Action.parent)}


def page(ctx: Context, query: Select, request: list_pb2.ListRequest, fields: dict[str, Field], rpc: str,
         newest_first: bool = True) -> tuple[list[Action], str]:
    """One page of `query`'s rows as `request` asks (`fields`: what it may filter and sort on; without a sort,
    by creation, newest first unless `newest_first` is False), and the next page's token ("" after the last)."""
    if request.raw_filters:
        raise Unimplemented(f"{rpc} does not read raw filters ({', '.join(request.raw_filters)}); use filters")
    for found in request.filters:
        if found.field.startswith("labels."):
            raise Unimplemented(f"{rpc} does not filter on labels yet (asked: {found.field})")
        op = _FUNCTIONS.get(found.function)
        if op is None:
            raise Unimplemented(f"{rpc} does not filter with {Function.Name(found.function)} yet (on {found.field}); "
                                f"use one of {', '.join(Function.Name(f) for f in _FUNCTIONS)}")
        query = query.where(condition(op, found.field, list(found.values), fields))
    sorts = [request.sort_by, *request.sort_by_fields] if request.HasField("sort_by") else list(request.sort_by_fields)
    for sort in sorts or [list_pb2.Sort(key="created_at", direction=list_pb2.Sort.DESCENDING if newest_first
                                        else list_pb2.Sort.ASCENDING)]:
        field = fields.get(sort.key)
        if field is None:
            raise InvalidArgument(f"{rpc} cannot sort by {sort.key!r}; sortable fields: {', '.join(sorted(fields))}")
        query = query.order_by(field.column.asc() if sort.direction == list_pb2.Sort.ASCENDING else
                               field.column.desc())
    query = query.order_by(Action.run_name, Action.name)  # a total order: pages neither skip nor repeat a row
    try:
        offset = int(request.token or 0)
    except ValueError:
        offset = -1
    if offset < 0:
        raise InvalidArgument(f"{rpc}: token {request.token!r} is not one this server gave")
    if request.limit < 0:
        raise InvalidArgument(f"{rpc}: limit must not be negative, got {request.limit}")
    limit = min(request.limit or 100, MAX_LIMIT)
    rows = store.listed(ctx, query, offset, limit + 1)
    return rows[:limit], str(offset + limit) if len(rows) > limit else ""
