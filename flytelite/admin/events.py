"""EventSink: where propeller reports every phase change, as FlytePropeller reports to FlyteAdmin.

Each event is applied synchronously in the caller's thread, in one short
transaction, with FlyteAdmin's semantics (execution_manager CreateWorkflowEvent,
node_execution_manager CreateNodeEvent, task_execution_manager
CreateTaskExecutionEvent). Stale events (a repeated phase, anything after a
terminal phase) are ignored, as propeller ignores FlyteAdmin's refusals of
them. An event about an execution or parent node that was never reported
raises NotFound: that is a bug in the producer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import cast

from flyteidl.admin import execution_pb2, node_execution_pb2
from flyteidl.core import execution_pb2 as core_execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.event import event_pb2
from google.protobuf.message import Message
from sqlalchemy.orm import Session

from flytelite.admin.event_rows import EventRows, NodeKey, Record, new_record, node_key
from flytelite.admin.exec_data import offload_literal_map
from flytelite.admin.task_events import apply_task_event, event_time
from flytelite.context import Context
from flytelite.idl.enums import enum_name
from flytelite.idl.phases import (
    NODE_TERMINAL,
    WORKFLOW_TERMINAL,
    NodePhase,
    WorkflowPhase,
    node_phase_name,
    workflow_phase_name,
)
from flytelite.idl.times import to_duration, to_timestamp
from flytelite.metrics import OWN
from flytelite.notifications.publish import publish_notifications
from flytelite.store.models import NodeExecution

log = logging.getLogger(__name__)


class EventSink:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def workflow_event(self, event: event_pb2.WorkflowExecutionEvent) -> None:
        self.apply_batch([event])

    def node_event(self, event: event_pb2.NodeExecutionEvent) -> None:
        self.apply_batch([event])

    def task_event(self, event: event_pb2.TaskExecutionEvent) -> None:
        self.apply_batch([event])

    def apply_batch(self, events: Sequence[Message], then: Callable[[Session], None] | None = None) -> None:
        """Apply events, in order, in one transaction (what one evaluation round reported): one commit and
        a few statements instead of a transaction per event; `then(session)` (the engine's status write)
        runs in the same transaction after them. Raises, applying none, if admin refuses one of them; the
        caller then sends them one by one."""
        with self.ctx.metrics.timer_ms(f"{OWN}events:apply_ms", "Time to record one round's events (a transaction)"):
            self._apply_batch(events, then)
        self.ctx.metrics.inc(f"{OWN}events:recorded", "Events recorded", len(events))

    def _apply_batch(self, events: Sequence[Message], then: Callable[[Session], None] | None) -> None:
        with self.ctx.db.session() as session:
            rows = EventRows(session)
            rows.prefetch(_named_nodes(events))
            workflow_events = []
            for event in events:
                if isinstance(event, event_pb2.NodeExecutionEvent):
                    self._node_event(rows, event)
                elif isinstance(event, event_pb2.TaskExecutionEvent):
                    apply_task_event(self.ctx, rows, event)
                else:  # the third kind a sink is sent
                    workflow_events.append(cast(event_pb2.WorkflowExecutionEvent, event))
            # Last, as they lock their execution's row (on SQLite, the whole database) until the commit; they
            # change no row the others read or write, so the rows end as in the events' own order.
            for event in workflow_events:
                self._workflow_event(rows, event)
            rows.flush()
            if then is not None:
                then(session)

    def _workflow_event(self, rows: EventRows, event: event_pb2.WorkflowExecutionEvent) -> None:
        row = rows.execution(event.execution_id)
        stale = _stale_workflow_event(row.phase, event.phase)
        if stale:
            log.debug("ignoring workflow event for %s: %s", event.execution_id.name, stale)
            return
        occurred = event_time(event.occurred_at, self.ctx)
        closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        closure.phase = event.phase
        closure.updated_at.CopyFrom(to_timestamp(occurred))
        row.phase, row.updated_at = event.phase, occurred
        if event.phase == WorkflowPhase.RUNNING:
            row.started_at = occurred
            closure.started_at.CopyFrom(to_timestamp(occurred))
        elif event.phase in WORKFLOW_TERMINAL and row.started_at is not None:
            delta = occurred - row.started_at
            row.duration = delta.total_seconds()
            closure.duration.CopyFrom(to_duration(delta))
        if event.output_uri:
            closure.outputs.uri = event.output_uri
        elif event.HasField("output_data"):
            closure.outputs.uri = offload_literal_map(self.ctx, event.execution_id, "outputs.pb",
                                                      event.output_data)
        elif event.HasField("error"):
            closure.error.CopyFrom(event.error)
            row.error_kind = enum_name(core_execution_pb2.ExecutionError.ErrorKind, event.error.kind)
        row.closure_pb = closure.SerializeToString()
        if event.phase in WORKFLOW_TERMINAL and closure.notifications:
            publish_notifications(self.ctx, rows.session, row.spec_pb, closure, event)

    def _node_event(self, rows: EventRows, event: event_pb2.NodeExecutionEvent) -> None:
        exec_id = event.id.execution_id
        rows.require_execution(exec_id)
        row = rows.node(exec_id, event.id.node_id)
        occurred = event_time(event.occurred_at, self.ctx)
        if row is None:
            parent_id = None
            if event.HasField("parent_node_metadata") and event.parent_node_metadata.node_id:
                parent_ident = idpb.NodeExecutionIdentifier(execution_id=exec_id,
                                                            node_id=event.parent_node_metadata.node_id)
                parent_id = rows.node_row_id(parent_ident)
            row = new_record(
                NodeExecution, project=exec_id.project, domain=exec_id.domain, execution_name=exec_id.name,
                node_id=event.id.node_id, parent_id=parent_id, phase=event.phase, input_uri="",
                closure_pb=b"", metadata_pb=b"", dynamic_workflow_pb=None, created_at=occurred,
                updated_at=occurred, started_at=None, duration=0.0,
            )
            rows.add_node(exec_id, row)
            closure = node_execution_pb2.NodeExecutionClosure(created_at=to_timestamp(occurred))
            metadata = node_execution_pb2.NodeExecutionMetaData(
                retry_group=event.retry_group, spec_node_id=event.spec_node_id)
        else:
            if row.phase == event.phase or row.phase in NODE_TERMINAL:
                log.debug("ignoring %s event for node %s of %s (already %s)", node_phase_name(event.phase),
                          event.id.node_id, exec_id.name, node_phase_name(row.phase))
                return
            closure = node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
            metadata = node_execution_pb2.NodeExecutionMetaData.FromString(row.metadata_pb)
        self._apply_node_event(row, closure, metadata, event, occurred)
        row.closure_pb = closure.SerializeToString()
        row.metadata_pb = metadata.SerializeToString()

    def _apply_node_event(self, row: Record, closure: node_execution_pb2.NodeExecutionClosure,
                          metadata: node_execution_pb2.NodeExecutionMetaData,
                          event: event_pb2.NodeExecutionEvent, occurred) -> None:
        reported = event_time(event.reported_at, self.ctx) if event.HasField("reported_at") else occurred
        row.phase = closure.phase = event.phase
        row.updated_at = reported
        closure.updated_at.CopyFrom(to_timestamp(reported))
        # Flags arrive only on some events (e.g. DYNAMIC_RUNNING): set, never clear.
        metadata.is_parent_node |= event.is_parent
        metadata.is_dynamic |= event.is_dynamic
        metadata.is_array |= event.is_array
        metadata.is_eager |= event.is_eager
        if not row.input_uri:
            if event.input_uri:
                row.input_uri = event.input_uri
            elif event.HasField("input_data"):
                row.input_uri = offload_literal_map(self.ctx, event.id.execution_id, "inputs.pb", event.input_data,
                                                    event.id.node_id)
        if event.phase == NodePhase.RUNNING:
            row.started_at = occurred
            closure.started_at.CopyFrom(to_timestamp(occurred))
            closure.deck_uri = event.deck_uri
        if event.phase in NODE_TERMINAL:
            self._node_terminal(row, closure, event, occurred)
        if event.HasField("workflow_node_metadata") and not closure.HasField("workflow_node_metadata"):
            # The admin message spells the field executionId (the event's is execution_id).
            closure.workflow_node_metadata.executionId.CopyFrom(event.workflow_node_metadata.execution_id)
        if event.HasField("task_node_metadata"):
            self._task_node_metadata(row, closure, event.task_node_metadata)

    def _node_terminal(self, row: Record, closure: node_execution_pb2.NodeExecutionClosure,
                       event: event_pb2.NodeExecutionEvent, occurred) -> None:
        if row.started_at is not None:
            delta = occurred - row.started_at
            row.duration = delta.total_seconds()
            closure.duration.CopyFrom(to_duration(delta))
        if event.output_uri:
            closure.output_uri = event.output_uri
        elif event.HasField("output_data"):
            closure.output_uri = offload_literal_map(self.ctx, event.id.execution_id, "outputs.pb",
                                                     event.output_data, event.id.node_id)
        elif event.HasField("error"):
            closure.error.CopyFrom(event.error)
        closure.deck_uri = event.deck_uri

    @staticmethod
    def _task_node_metadata(row: Record, closure: node_execution_pb2.NodeExecutionClosure,
                            meta: event_pb2.TaskNodeMetadata) -> None:
        previous = closure.task_node_metadata if closure.HasField("task_node_metadata") else None
        target = node_execution_pb2.TaskNodeMetadata(checkpoint_uri=meta.checkpoint_uri)
        if meta.HasField("catalog_key"):
            target.cache_status = meta.cache_status
            target.catalog_key.CopyFrom(meta.catalog_key)
        elif previous is not None:
            # Later events of a cached node may omit the cache outcome; keep the one reported.
            target.cache_status = previous.cache_status
            if previous.HasField("catalog_key"):
                target.catalog_key.CopyFrom(previous.catalog_key)
        closure.task_node_metadata.CopyFrom(target)
        if meta.HasField("dynamic_workflow"):
            dynamic = meta.dynamic_workflow
            if dynamic.HasField("compiled_workflow"):
                row.dynamic_workflow_pb = dynamic.compiled_workflow.SerializeToString()
            if dynamic.dynamic_job_spec_uri:
                closure.dynamic_job_spec_uri = dynamic.dynamic_job_spec_uri


def _named_nodes(events: Sequence[Message]) -> set[NodeKey]:
    """Every node execution the events name (their own, their parents', the task attempts' nodes)."""
    keys: set[NodeKey] = set()
    for event in events:
        if isinstance(event, event_pb2.NodeExecutionEvent):
            keys.add(node_key(event.id.execution_id, event.id.node_id))
            if event.parent_node_metadata.node_id:
                keys.add(node_key(event.id.execution_id, event.parent_node_metadata.node_id))
        elif isinstance(event, event_pb2.TaskExecutionEvent):
            node = event.parent_node_execution_id
            keys.add(node_key(node.execution_id, node.node_id))
    return keys


def _stale_workflow_event(current: int, new: int) -> str:
    """Why FlyteAdmin would refuse this workflow phase change ('' when it applies)."""
    if new != WorkflowPhase.QUEUED and current == new:
        return f"phase {workflow_phase_name(new)} already recorded"
    if current in WORKFLOW_TERMINAL:
        return f"already {workflow_phase_name(current)}"
    if current == WorkflowPhase.RUNNING and new == WorkflowPhase.QUEUED:
        return "cannot go back from RUNNING to QUEUED"
    if current == WorkflowPhase.ABORTING and new not in WORKFLOW_TERMINAL:
        return f"aborting; {workflow_phase_name(new)} is not a terminal phase"
    return ""
