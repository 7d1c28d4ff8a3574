"""Builds the flyteidl events FlytePropeller sends and hands them to an EventSink (FlytePropeller's events/).

EventSink is the engine's interface; admin's implementation (flytelite.admin.events) is wired in by
the composition root.

Events may be sent twice for one transition (a crash between sending and persisting the status
re-runs the transition): admin answers AlreadyExists, which is fine. Other refusals from admin
(e.g. the execution is already terminal) are logged and do not stall the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from flyteidl.core import execution_pb2, identifier_pb2
from flyteidl.event import event_pb2
from google.protobuf import struct_pb2
from google.protobuf.message import Message
from sqlalchemy.orm import Session

from flytelite import errors
from flytelite.idl.enums import as_enum
from flytelite.idl.times import Clock, to_timestamp

log = logging.getLogger(__name__)

PRODUCER_ID = "flytelite"
# Versions FlytePropeller stamps: admin reads is_parent / is_dynamic bits and per-subtask metadata.
NODE_EVENT_VERSION = 1
TASK_EVENT_VERSION = 1


# What admin may answer to an event that the engine logs and goes on from.
_REFUSALS = (errors.AlreadyExists, errors.FailedPrecondition, errors.NotFound, errors.InvalidArgument)


class EventSink(Protocol):
    """Where the engine reports every phase change (FlytePropeller's events.EventSink, one method per kind).

    A refusal crosses as flytelite.errors (AlreadyExists: a repeated event; FailedPrecondition, NotFound,
    InvalidArgument: stale or unknown). A sink may also offer `apply_batch(events)` (BatchEventSink).
    """

    def workflow_event(self, event: event_pb2.WorkflowExecutionEvent) -> None: ...

    def node_event(self, event: event_pb2.NodeExecutionEvent) -> None: ...

    def task_event(self, event: event_pb2.TaskExecutionEvent) -> None: ...


class BatchEventSink(EventSink, Protocol):
    def apply_batch(self, events: Sequence[Message], then: Callable[[Session], None] | None = None) -> None:
        """Apply the events in order, all or none (raising a refusal when none were applied); `then` runs
        in the same transaction after them."""


class RoundEvents(Protocol):
    """What a round's nodes report to: an EventRecorder, or the stand-in an array node hands its items."""

    def flush(self, then: Callable[[Session], None] | None = None) -> bool: ...

    def workflow(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, phase: int, *,
        output_uri: str = "", error: execution_pb2.ExecutionError | None = None,
    ) -> None: ...

    def node(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str, phase: int, *,
        spec_node_id: str, node_name: str = "", input_uri: str = "", output_uri: str = "",
        error: execution_pb2.ExecutionError | None = None,
        target_entity: identifier_pb2.Identifier | None = None,
        task_node_metadata: event_pb2.TaskNodeMetadata | None = None,
        deck_uri: str = "", retry_group: str = "",
        workflow_node_metadata: event_pb2.WorkflowNodeMetadata | None = None,
        parent_node_id: str = "", is_parent: bool = False, is_dynamic: bool = False,
        is_in_dynamic_chain: bool = False, is_array: bool = False,
    ) -> None: ...

    def task(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str,
        task_id: identifier_pb2.Identifier, retry_attempt: int, phase: int, phase_version: int, *,
        task_type: str = "", input_uri: str = "", output_uri: str = "",
        error: execution_pb2.ExecutionError | None = None,
        logs: list[execution_pb2.TaskLog] | None = None, reason: str = "",
        generated_name: str = "", plugin_identifier: str = "",
        external_resources: list[event_pb2.ExternalResourceInfo] | None = None,
        custom_info: struct_pb2.Struct | None = None,
    ) -> None: ...


class EventRecorder:
    def __init__(self, sink: EventSink, clock: Clock):
        self.sink = sink
        self.clock = clock

    def buffered(self) -> BufferedEventRecorder:
        """A recorder for one evaluation round: it keeps the events until flush() hands them over together."""
        return BufferedEventRecorder(self.sink, self.clock)

    def flush(self, then: Callable[[Session], None] | None = None) -> bool:
        """Events are sent as they are made: nothing to flush (and `then` is not run: False)."""
        return False

    def _send(self, fn, event) -> None:
        try:
            fn(event)
        except errors.AlreadyExists:
            pass
        except _REFUSALS as e:
            log.warning("admin refused %s: %s", type(event).__name__, e)

    def workflow(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, phase: int, *,
        output_uri: str = "", error: execution_pb2.ExecutionError | None = None,
    ) -> None:
        ev = event_pb2.WorkflowExecutionEvent(
            execution_id=exec_id, producer_id=PRODUCER_ID,
            phase=as_enum(execution_pb2.WorkflowExecution.Phase, phase), occurred_at=to_timestamp(self.clock.now()),
        )
        if output_uri:
            ev.output_uri = output_uri
        elif error is not None:
            ev.error.CopyFrom(error)
        self._send(self.sink.workflow_event, ev)

    def node(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str, phase: int, *,
        spec_node_id: str, node_name: str = "", input_uri: str = "", output_uri: str = "",
        error: execution_pb2.ExecutionError | None = None,
        target_entity: identifier_pb2.Identifier | None = None,
        task_node_metadata: event_pb2.TaskNodeMetadata | None = None,
        deck_uri: str = "", retry_group: str = "",
        workflow_node_metadata: event_pb2.WorkflowNodeMetadata | None = None,
        parent_node_id: str = "", is_parent: bool = False, is_dynamic: bool = False,
        is_in_dynamic_chain: bool = False, is_array: bool = False,
    ) -> None:
        now = to_timestamp(self.clock.now())
        ev = event_pb2.NodeExecutionEvent(
            id=identifier_pb2.NodeExecutionIdentifier(node_id=node_id, execution_id=exec_id),
            producer_id=PRODUCER_ID, phase=as_enum(execution_pb2.NodeExecution.Phase, phase),
            occurred_at=now, reported_at=now,
            spec_node_id=spec_node_id, node_name=node_name, retry_group=retry_group,
            event_version=NODE_EVENT_VERSION, deck_uri=deck_uri,
            is_parent=is_parent, is_dynamic=is_dynamic, is_in_dynamic_chain=is_in_dynamic_chain,
            is_array=is_array,
        )
        if parent_node_id:
            # A nested node (branch arm, subworkflow or dynamic child): admin files it under its parent.
            ev.parent_node_metadata.node_id = parent_node_id
        if input_uri:
            ev.input_uri = input_uri
        if output_uri:
            ev.output_uri = output_uri
        elif error is not None:
            ev.error.CopyFrom(error)
        if target_entity is not None:
            ev.target_entity.CopyFrom(target_entity)
        if task_node_metadata is not None:
            ev.task_node_metadata.CopyFrom(task_node_metadata)
        if workflow_node_metadata is not None:
            ev.workflow_node_metadata.CopyFrom(workflow_node_metadata)
        self._send(self.sink.node_event, ev)

    def task(
        self, exec_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str,
        task_id: identifier_pb2.Identifier, retry_attempt: int, phase: int, phase_version: int, *,
        task_type: str = "", input_uri: str = "", output_uri: str = "",
        error: execution_pb2.ExecutionError | None = None,
        logs: list[execution_pb2.TaskLog] | None = None, reason: str = "",
        generated_name: str = "", plugin_identifier: str = "",
        external_resources: list[event_pb2.ExternalResourceInfo] | None = None,
        custom_info: struct_pb2.Struct | None = None,
    ) -> None:
        now = to_timestamp(self.clock.now())
        ev = event_pb2.TaskExecutionEvent(
            task_id=task_id,
            parent_node_execution_id=identifier_pb2.NodeExecutionIdentifier(node_id=node_id, execution_id=exec_id),
            retry_attempt=retry_attempt, phase=as_enum(execution_pb2.TaskExecution.Phase, phase),
            phase_version=phase_version,
            producer_id=PRODUCER_ID, occurred_at=now, reported_at=now, task_type=task_type,
            reason=reason, event_version=TASK_EVENT_VERSION, logs=logs or [],
        )
        if reason:
            ev.reasons.add(occurred_at=now, reason=reason)
        if generated_name or plugin_identifier:
            ev.metadata.generated_name = generated_name
            ev.metadata.plugin_identifier = plugin_identifier
        if external_resources:
            # An array node's items (FlytePropeller's ArrayNode event recorder).
            ev.metadata.external_resources.extend(external_resources)
        if custom_info is not None:
            ev.custom_info.CopyFrom(custom_info)
        if input_uri:
            ev.input_uri = input_uri
        if output_uri:
            ev.output_uri = output_uri
        elif error is not None:
            ev.error.CopyFrom(error)
        self._send(self.sink.task_event, ev)


class BufferedEventRecorder(EventRecorder):
    """One round's events, applied by admin in one transaction when the round flushes them.

    A round flushes before it persists the status (so admin never misses a transition the engine
    recorded) and before anything that needs admin to know of the events so far (a launch-plan node
    launching its child execution names its node execution). A sink without apply_batch, or a batch
    admin refuses part of, gets the events one by one, each refusal handled as an unbuffered one.
    """

    def __init__(self, sink: EventSink, clock: Clock):
        super().__init__(sink, clock)
        self._pending: list[tuple] = []

    def buffered(self) -> BufferedEventRecorder:
        return self

    def _send(self, fn, event) -> None:
        self._pending.append((fn, event))

    def flush(self, then: Callable[[Session], None] | None = None) -> bool:
        """Hand the round's events to admin; with `then` (a write of the engine's own), in the same
        transaction when the sink can: True if `then` ran, False if the caller must still run it."""
        pending, self._pending = self._pending, []
        if not pending:
            return False
        apply_batch = getattr(self.sink, "apply_batch", None)
        if apply_batch is not None and (len(pending) > 1 or then is not None):
            try:
                apply_batch([event for _, event in pending], then=then)
                return then is not None
            except _REFUSALS:
                pass  # none applied: send them one by one, so that only the refused ones are left out
        for fn, event in pending:
            EventRecorder._send(self, fn, event)
        return False
