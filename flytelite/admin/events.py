"""EventSink: where propeller reports every phase change, as FlytePropeller reports to FlyteAdmin.

TODO: being written.
"""

from __future__ import annotations

from flyteidl.event import event_pb2

from flytelite.context import Context


class EventSink:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def workflow_event(self, event: event_pb2.WorkflowExecutionEvent) -> None:
        raise NotImplementedError

    def node_event(self, event: event_pb2.NodeExecutionEvent) -> None:
        raise NotImplementedError

    def task_event(self, event: event_pb2.TaskExecutionEvent) -> None:
        raise NotImplementedError
