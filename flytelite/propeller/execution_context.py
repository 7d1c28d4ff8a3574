"""What one evaluation round of one workflow execution shares with every node it touches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from flyteidl.core import identifier_pb2, literals_pb2

from flytelite.context import Context, ExecutionKey
from flytelite.propeller.clients import AdminClients, unconnected
from flytelite.propeller.events import RoundEvents
from flytelite.propeller.status import WorkflowStatus
from flytelite.propeller.workflow import ExecutableWorkflow
from flytelite.store.flyteworkflow import ExecutionSpec


@dataclass
class ExecutionRound:
    ctx: Context
    key: ExecutionKey
    spec: ExecutionSpec
    workflow: ExecutableWorkflow
    status: WorkflowStatus
    events: RoundEvents
    # Wakes the engine for this execution later (delay in seconds, None = now); thread-safe.
    wake: Callable[[float | None], None]
    now: datetime = field(default=None)  # type: ignore[assignment]
    # Running task/array/launch-plan nodes, for max parallelism.
    parallelism: int = 0
    # Set when state changed in a way the next round should see at once (e.g. a launch was prepared).
    requeue_now: bool = False
    # Earliest time (seconds from now) something needs a look: a timeout, a poll.
    requeue_after: float | None = None
    # outputs.pb files read this round, by path (a passed node's outputs never change; a wide fan-out
    # would otherwise read its source once per downstream node). Read-only: never modify one.
    outputs_read: dict[str, literals_pb2.LiteralMap] = field(default_factory=dict)
    # How nodes reach admin: child executions, launch plans and tasks, signals, recovery.
    clients: AdminClients = field(default_factory=unconnected)
    # Whether this replica still holds the execution's lease long enough to start a task's process: one
    # that lost it could start a process while the new owner, not finding one, starts it again.
    may_launch: Callable[[], bool] = field(default=lambda: True)

    def __post_init__(self) -> None:
        if self.now is None:
            self.now = self.ctx.clock.now()

    @property
    def exec_id(self) -> identifier_pb2.WorkflowExecutionIdentifier:
        project, domain, name = self.key
        return identifier_pb2.WorkflowExecutionIdentifier(project=project, domain=domain, name=name)

    @property
    def max_parallelism(self) -> int:
        return self.spec.max_parallelism

    def requeue_in(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds
