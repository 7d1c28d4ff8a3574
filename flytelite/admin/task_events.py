"""Applying a TaskExecutionEvent to its TaskExecution row (FlyteAdmin's CreateTaskExecutionEvent).

One row per (execution, node, task, retry attempt). Logs merge by uri and name,
reasons accumulate, custom_info merges key by key, and a terminal attempt never
changes again: later events for it are stale and ignored.
"""

from __future__ import annotations

import bisect
import logging
from datetime import datetime

from flyteidl.admin import task_execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.event import event_pb2
from google.protobuf import json_format, struct_pb2, timestamp_pb2

from flytelite.admin.event_rows import EventRows, Record, new_record
from flytelite.admin.exec_data import offload_literal_map
from flytelite.context import Context
from flytelite.idl.phases import TASK_TERMINAL, TaskPhase, task_phase_name
from flytelite.idl.times import from_timestamp, to_duration, to_timestamp
from flytelite.store.models import TaskExecution

log = logging.getLogger(__name__)


def event_time(ts: timestamp_pb2.Timestamp, ctx: Context) -> datetime:
    """When an event happened; the server's clock when the producer left it unset."""
    if ts.seconds == 0 and ts.nanos == 0:
        return ctx.clock.now()
    return from_timestamp(ts)


def apply_task_event(ctx: Context, rows: EventRows, event: event_pb2.TaskExecutionEvent) -> None:
    """Apply one event to the rows of its transaction (written by `rows.flush`)."""
    ident = idpb.TaskExecutionIdentifier(task_id=event.task_id, node_execution_id=event.parent_node_execution_id,
                                         retry_attempt=event.retry_attempt)
    row = rows.task(ident)
    is_new = row is None
    occurred = event_time(event.occurred_at, ctx)
    reported = event_time(event.reported_at, ctx) if event.HasField("reported_at") else occurred
    if row is None:
        # A task attempt belongs to a node execution the engine reported first.
        rows.require_node(event.parent_node_execution_id)
        row = _new_row(event, occurred)
        rows.add_task(ident, row)
        closure = task_execution_pb2.TaskExecutionClosure(
            created_at=to_timestamp(occurred), logs=event.logs, task_type=event.task_type,
            event_version=event.event_version,
        )
        if event.HasField("custom_info"):
            closure.custom_info.CopyFrom(event.custom_info)
        if event.HasField("metadata"):
            closure.metadata.CopyFrom(event.metadata)
    else:
        if row.phase in TASK_TERMINAL:
            log.debug("ignoring %s event for finished task attempt %s (already %s)",
                      task_phase_name(event.phase), ident, task_phase_name(row.phase))
            return
        closure = task_execution_pb2.TaskExecutionClosure.FromString(row.closure_pb)
        logs = merge_logs(list(closure.logs), list(event.logs))
        del closure.logs[:]
        closure.logs.extend(_visible_logs(logs, event.phase))
        if event.HasField("custom_info"):
            merged = merge_custom(closure.custom_info if closure.HasField("custom_info") else None,
                                  event.custom_info)
            closure.custom_info.CopyFrom(merged)
        if event.HasField("metadata"):
            _merge_metadata(closure.metadata, event.metadata)
        closure.event_version = max(closure.event_version, event.event_version)
    _add_reasons(closure, event, occurred, is_new)
    if not row.input_uri:
        if event.input_uri:
            row.input_uri = event.input_uri
        elif event.HasField("input_data"):
            row.input_uri = offload_literal_map(ctx, event.parent_node_execution_id.execution_id, "inputs.pb",
                                                event.input_data, *_attempt_parts(ident))
    row.phase = event.phase
    closure.phase = event.phase
    closure.updated_at.CopyFrom(to_timestamp(reported))
    row.updated_at = reported
    if event.phase == TaskPhase.RUNNING and row.started_at is None:
        row.started_at = occurred
        closure.started_at.CopyFrom(to_timestamp(occurred))
    if event.phase in TASK_TERMINAL:
        _terminal(ctx, row, closure, event, occurred, ident)
    row.closure_pb = closure.SerializeToString()


def _new_row(event: event_pb2.TaskExecutionEvent, occurred: datetime) -> Record:
    node = event.parent_node_execution_id
    return new_record(
        TaskExecution, project=node.execution_id.project, domain=node.execution_id.domain,
        execution_name=node.execution_id.name,
        node_id=node.node_id, task_project=event.task_id.project, task_domain=event.task_id.domain,
        task_name=event.task_id.name, task_version=event.task_id.version, retry_attempt=event.retry_attempt,
        phase=event.phase, input_uri="", closure_pb=b"", created_at=occurred, updated_at=occurred,
        started_at=None, duration=0.0,
    )


def _attempt_parts(ident: idpb.TaskExecutionIdentifier) -> tuple[str, ...]:
    t = ident.task_id
    return (ident.node_execution_id.node_id, t.project, t.domain, t.name, t.version, str(ident.retry_attempt))


def _terminal(ctx: Context, row: Record, closure: task_execution_pb2.TaskExecutionClosure,
              event: event_pb2.TaskExecutionEvent, occurred: datetime, ident: idpb.TaskExecutionIdentifier) -> None:
    started = row.started_at
    if started is not None:
        delta = occurred - started
        row.duration = delta.total_seconds()
        closure.started_at.CopyFrom(to_timestamp(started))
        closure.duration.CopyFrom(to_duration(delta))
    if event.output_uri:
        closure.output_uri = event.output_uri
    elif event.HasField("output_data"):
        closure.output_uri = offload_literal_map(ctx, ident.node_execution_id.execution_id, "outputs.pb",
                                                 event.output_data, *_attempt_parts(ident))
    elif event.HasField("error"):
        closure.error.CopyFrom(event.error)


def _add_reasons(closure: task_execution_pb2.TaskExecutionClosure, event: event_pb2.TaskExecutionEvent,
                 occurred: datetime, is_new: bool) -> None:
    if event.reasons:
        for reason in event.reasons:
            closure.reasons.add(occurred_at=reason.occurred_at, message=reason.reason)
        closure.reason = event.reasons[-1].reason
    elif event.reason:
        # A repeated reason is not news; only a changed one joins the time series.
        if is_new or closure.reason != event.reason:
            closure.reasons.add(occurred_at=to_timestamp(occurred), message=event.reason)
        closure.reason = event.reason


def merge_logs(existing: list, latest: list) -> list:
    """The latest logs, plus every earlier log that no latest log replaced (same uri or same name)."""
    if not latest:
        return existing
    uris = {lg.uri for lg in latest}
    names = {lg.name for lg in latest if lg.name}
    return latest + [lg for lg in existing if lg.uri not in uris and lg.name not in names]


def _visible_logs(logs: list, phase: int) -> list:
    visible = []
    for lg in logs:
        if phase in TASK_TERMINAL and lg.HideOnceFinished:
            continue
        if phase in (TaskPhase.QUEUED, TaskPhase.INITIALIZING) and not lg.ShowWhilePending:
            continue
        visible.append(lg)
    return visible


def merge_custom(existing: struct_pb2.Struct | None, latest: struct_pb2.Struct) -> struct_pb2.Struct:
    """JSON merge patch (RFC 7386) of `latest` onto `existing`: new keys win, nested objects merge."""
    if existing is None:
        return latest
    merged = _merge_patch(json_format.MessageToDict(existing), json_format.MessageToDict(latest))
    out = struct_pb2.Struct()
    out.update(merged)
    return out


def _merge_patch(target: dict, patch: dict) -> dict:
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge_patch(result[key], value)
        else:
            result[key] = value
    return result


def _merge_metadata(existing: event_pb2.TaskExecutionMetadata, latest: event_pb2.TaskExecutionMetadata) -> None:
    if latest.generated_name:
        existing.generated_name = latest.generated_name
    if latest.plugin_identifier:
        existing.plugin_identifier = latest.plugin_identifier
    if latest.instance_class != event_pb2.TaskExecutionMetadata.DEFAULT:
        existing.instance_class = latest.instance_class
    del existing.resource_pool_info[:]
    existing.resource_pool_info.extend(latest.resource_pool_info)
    # Kept sorted by (index, retry attempt). An array's progress events carry the items that changed: known
    # ones are found by bisection and updated in place, and new ones mostly come after the last known one and
    # are appended. An event costs what it carries, not the array's size.
    resources = existing.external_resources
    added: dict[tuple[int, int], event_pb2.ExternalResourceInfo] = {}
    for resource in latest.external_resources:
        key = _resource_key(resource)
        at = bisect.bisect_left(resources, key, key=_resource_key)
        if at < len(resources) and _resource_key(resources[at]) == key:
            _update_resource(resources[at], resource)
        elif key in added:
            _update_resource(added[key], resource)
        else:
            added[key] = resource
    if not added:
        return
    keys = sorted(added)
    if not resources or keys[0] > _resource_key(resources[-1]):
        resources.extend(added[k] for k in keys)
        return
    merged = sorted([*resources, *added.values()], key=_resource_key)
    copies = [type(r)() for r in merged]
    for copy, r in zip(copies, merged, strict=True):
        copy.CopyFrom(r)
    del resources[:]
    resources.extend(copies)


def _resource_key(resource: event_pb2.ExternalResourceInfo) -> tuple[int, int]:
    return resource.index, resource.retry_attempt


def _update_resource(current: event_pb2.ExternalResourceInfo, resource: event_pb2.ExternalResourceInfo) -> None:
    """What a later event says of an array item overrides what was known of it."""
    if resource.external_id:
        current.external_id = resource.external_id
    current.phase = resource.phase
    if resource.cache_status != 0:  # CACHE_DISABLED says nothing new
        current.cache_status = resource.cache_status
    logs = merge_logs(list(current.logs), list(resource.logs))
    del current.logs[:]
    current.logs.extend(logs)
    if resource.HasField("custom_info"):
        current.custom_info.CopyFrom(resource.custom_info)
