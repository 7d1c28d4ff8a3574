"""The WorkflowExecutor: one evaluation round of one execution (FlytePropeller's workflow/executor.go).

Loads the FlyteWorkflow row, advances the workflow phase (Ready -> Running -> Succeeding -> Success,
or Failing [-> HandlingFailureNode] -> Failed, or Aborted when admin set abort_cause), lets the NodeExecutor walk the DAG,
reports WorkflowExecutionEvents, and persists the status once per round (setting done=True when
terminal). While a round leaves work that should happen at once (a prepared task launch, a phase
that settles immediately) further rounds run in memory, each persisted before the next acts.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from flyteidl.core import execution_pb2
from sqlalchemy import Boolean, Text, bindparam, case, null, select
from sqlalchemy.orm import Session

from flytelite.context import Context, ExecutionKey
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import ErrorInfo
from flytelite.idl.ids import END_NODE, execution_id
from flytelite.logs import execution_scope
from flytelite.plugins.registry import PluginRegistry
from flytelite.propeller.clients import AdminClients, unconnected
from flytelite.propeller.events import EventRecorder
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.leases import LeaseLost, Leases
from flytelite.propeller.nodes.executor import NodeExecutor
from flytelite.propeller.nodes.failure_node import handle_failure_node
from flytelite.propeller.phases import WORKFLOW_DONE, WorkflowStatusPhase
from flytelite.propeller.runs import RunExecutor
from flytelite.propeller.sized import SizedCache
from flytelite.propeller.status import WorkflowStatus, iso
from flytelite.propeller.workflow import ExecutableWorkflow
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import FlyteWorkflow
from flytelite.store.statements import DriverQuery, changed_rows

log = logging.getLogger(__name__)
# Every round reads and writes one row: the statements are built once (building one, and its cache key, costs
# more than running it) and executed with the execution's key bound. The write is the table's, not the
# ORM entity's: no object of the row is loaded, so there is nothing to synchronize.
_TABLE = FlyteWorkflow.table()
_THIS_ROW = (_TABLE.c.project == bindparam("key_project"), _TABLE.c.domain == bindparam("key_domain"),
             _TABLE.c.name == bindparam("key_name"))
# A round reads the workflow and the spec (which never change) only when it does not hold them yet, and the
# status only when it is not the one the round before left: the row grows with the workflow's nodes, and
# reading it whole would be a large part of a round that only starts the next task.
_HELD = bindparam("held", type_=Boolean)
_KEPT_STATUS = bindparam("kept_status", type_=Text)
_READ_ROUND = select(
    case((_HELD, null()), else_=_TABLE.c.closure_pb).label("closure_pb"),
    case((_HELD, null()), else_=_TABLE.c.spec_json).label("spec_json"),
    case((_TABLE.c.status_json == _KEPT_STATUS, null()), else_=_TABLE.c.status_json).label("status_json"),
    _TABLE.c.abort_cause, _TABLE.c.done).where(*_THIS_ROW)
# Only the engine's columns: admin writes abort_cause concurrently.
_WRITE_STATUS = _TABLE.update().where(*_THIS_ROW).values(
    status_json=bindparam("new_status"), done=bindparam("new_done"), updated_at=bindparam("new_updated_at"))


def _key_params(key: ExecutionKey) -> dict[str, str]:
    return {"key_project": key[0], "key_domain": key[1], "key_name": key[2]}


WfPhase = execution_pb2.WorkflowExecution.Phase
# Rounds evaluated back to back without going through the queue.
MAX_STREAK = 10
# Rounds that may raise before the execution is failed as a system error.
MAX_FAILED_ROUNDS = 10
# The nodes of the statuses kept in memory between rounds, in all; a status dropped is read again from its row.
STATUS_NODES = 100_000


@dataclass
class RoundResult:
    done: bool = False
    # Seconds until the execution needs another look (None: only when something wakes it).
    requeue_after: float | None = None
    # Consecutive rounds this pass evaluated (FlytePropeller's streak, up to MAX_STREAK).
    streak: int = 0


class WorkflowExecutor:
    def __init__(self, ctx: Context, events: EventRecorder, nodes: NodeExecutor,
                 wake: Callable[[ExecutionKey, float | None], None], clients: AdminClients | None = None,
                 leases: Leases | None = None, mirror=None, plugins: PluginRegistry | None = None):
        """With `leases`, every status write is fenced by this replica's lease (LeaseLost otherwise); a
        `mirror` (propeller/crd) is told each persisted status. With `plugins`, Flyte 2 runs are driven too
        (propeller/runs.py)."""
        self.ctx = ctx
        self.leases = leases
        self.mirror = mirror
        self.clients = clients if clients is not None else unconnected()
        self.events = events
        self.nodes = nodes
        self.wake = wake
        # Each execution's workflow and spec, read by its first round on this replica.
        self._workflows: dict[ExecutionKey, tuple[ExecutableWorkflow, ExecutionSpec]] = {}
        # The status each execution's last round left, with its JSON as persisted: the next round takes it
        # instead of parsing the row again, when the row still holds that JSON. Up to STATUS_NODES nodes in all.
        self._statuses: SizedCache[ExecutionKey, tuple[str, WorkflowStatus]] = SizedCache(STATUS_NODES)
        self._write_status = leases.fence(_WRITE_STATUS) if leases is not None else _WRITE_STATUS
        self._read_round = DriverQuery(_READ_ROUND, ctx.db.engine.dialect)
        self.runs = (RunExecutor(ctx, plugins, wake, self._may_launch, self._persist)
                     if plugins is not None else None)

    def handle(self, key: ExecutionKey) -> RoundResult:
        """Evaluate one execution; raises if the round failed (its status is then not persisted)."""
        with execution_scope("/".join(key)):
            return self._handle(key)

    def _handle(self, key: ExecutionKey) -> RoundResult:
        # Taken out for the round: a round that raises leaves no half-changed status behind.
        kept = self._statuses.pop(key)
        held = self._workflows.get(key)
        with self.ctx.db.reading() as connection:
            row = self._read_round.one_or_none(connection, {**_key_params(key), "held": held is not None,
                                                            "kept_status": kept[0] if kept is not None else None})
        if row is None or row.done:
            self._workflows.pop(key, None)
            return RoundResult(done=True)
        if held is None and not row.closure_pb:  # a Flyte 2 run: no workflow, its actions
            return self._run_round(key, row)
        if held is None:
            held = self._workflows[key] = (ExecutableWorkflow.from_bytes(row.closure_pb),
                                           ExecutionSpec.from_json(row.spec_json))
        workflow, spec = held
        if row.status_json is None and kept is not None:  # the row holds the status the last round left
            persisted, status = kept
        else:
            persisted = row.status_json
            status = WorkflowStatus.from_json(persisted)
        with self.ctx.tracing.span("propeller round", parent=spec.traceparent or None,
                                   attributes={"flyte.execution": "/".join(key)}):
            return self._rounds(key, row, workflow, spec, persisted, status)

    def _rounds(self, key: ExecutionKey, row, workflow: ExecutableWorkflow, spec: ExecutionSpec, persisted,
                status: WorkflowStatus) -> RoundResult:
        """Evaluate the execution until nothing changes at once (at most MAX_STREAK times), persisting each."""
        rnd = None
        # Admin applies a round's events in one transaction, which also persists the status that follows from them.
        events = self.events.buffered()
        for streak in range(1, MAX_STREAK + 1):  # noqa: B007 - the streak is the result's
            rnd = ExecutionRound(ctx=self.ctx, key=key, spec=spec, workflow=workflow, status=status,
                                 events=events, wake=lambda delay, k=key: self.wake(k, delay),  # type: ignore[misc]  # a lambda with a default
                                 clients=self.clients, may_launch=partial(self._may_launch, key))
            if row.abort_cause and status.phase not in WORKFLOW_DONE:
                self._abort(rnd, row.abort_cause)
            else:
                before = status.phase
                self._advance(rnd)
                rnd.requeue_now = rnd.requeue_now or status.phase != before
            done = status.phase in WORKFLOW_DONE
            text = status.to_json()
            if text != persisted or done:
                # With the round's events, in their transaction when admin's sink can.
                write = partial(self._persist, key, text, done)
                if not events.flush(then=write):
                    with self.ctx.db.session() as session:
                        write(session)
                persisted = text
                if self.mirror is not None:
                    self.mirror.persisted(key, workflow, spec, text)
            else:
                events.flush()
            if done:
                self._workflows.pop(key, None)
                self._wake_parent(key, spec)
                return RoundResult(done=True, streak=streak)
            if not rnd.requeue_now:
                break
        else:
            self._statuses.put(key, (persisted, status), status.written_nodes)
            return RoundResult(requeue_after=0, streak=streak)
        self._statuses.put(key, (persisted, status), status.written_nodes)
        return RoundResult(requeue_after=rnd.requeue_after, streak=streak)

    def _run_round(self, key: ExecutionKey, row) -> RoundResult:
        if self.runs is None:
            raise RuntimeError(f"{'/'.join(key)} is a Flyte 2 run, and this engine was built without the plugins "
                               "that run its actions")
        with self.ctx.tracing.span("propeller round", attributes={"flyte.run": "/".join(key)}):
            result = self.runs.handle(key, row.spec_json, row.abort_cause)
        return RoundResult(done=result.done, requeue_after=result.requeue_after, streak=1)

    def record_failed_round(self, key: ExecutionKey, error: BaseException) -> bool:
        """Count a round that raised; after too many, fail the execution. True if it was failed."""
        with self.ctx.db.session() as s:
            row = s.get(FlyteWorkflow, key)
            if row is None or row.done or (self.leases is not None and self.leases.held_elsewhere(row.lease_owner)):
                return False
            if not row.closure_pb:
                return self.runs is not None and self.runs.record_failed_round(s, key, row, error, MAX_FAILED_ROUNDS)
            status = WorkflowStatus.from_json(row.status_json)
            status.failed_attempts += 1
            status.message = f"evaluation round failed: {error}"
            give_up = status.failed_attempts >= MAX_FAILED_ROUNDS
            err = ErrorInfo(E.ENGINE_ERROR, f"flytelite failed to evaluate execution {'/'.join(key)} "
                            f"{status.failed_attempts} times; last error: {error}", execution_pb2.ExecutionError.SYSTEM)
            if give_up:
                status.phase, status.error = WorkflowStatusPhase.FAILED, err
                status.stopped_at = iso(self.ctx.clock.now())
            row.status_json = status.to_json()
            row.done = give_up
            row.updated_at = self.ctx.clock.now()
        if give_up:
            self._workflows.pop(key, None)
            self.events.workflow(_exec_id(key), WfPhase.FAILED, error=err.to_proto())
            self._wake_parent(key, ExecutionSpec.from_json(row.spec_json))
        return give_up

    def _wake_parent(self, key: ExecutionKey, spec: ExecutionSpec) -> None:
        """A finished child execution wakes the parent whose launch-plan node waits for it."""
        if spec.parent_execution:
            self.wake(ExecutionKey(key[0], key[1], spec.parent_execution), None)

    # -- phases -----------------------------------------------------------------------------
    def _advance(self, rnd: ExecutionRound) -> None:
        # A phase entered from READY or RUNNING is handled in the same pass: READY and SUCCEEDING wait for
        # nothing, and FAILING for nothing but the nodes' aborts. FlytePropeller takes one phase per round; the
        # events are the same here, and an execution whose nodes end in one pass is written once, not three times.
        status = rnd.status
        if status.phase == WorkflowStatusPhase.READY:
            status.data_dir = self.ctx.blobs.execution_dir(*rnd.key)
            self._to(rnd, WorkflowStatusPhase.RUNNING)
        if status.phase == WorkflowStatusPhase.RUNNING:
            outcome = self.nodes.walk(rnd)
            if outcome.error is not None:
                self._to(rnd, WorkflowStatusPhase.FAILING, error=outcome.error)
            elif outcome.complete:
                self._to(rnd, WorkflowStatusPhase.SUCCEEDING)
        phase = status.phase
        if phase == WorkflowStatusPhase.SUCCEEDING:
            end = status.node(END_NODE)
            status.output_uri = posixpath.join(end.output_dir, "outputs.pb") if end.output_dir else ""
            self._to(rnd, WorkflowStatusPhase.SUCCESS)
        elif phase == WorkflowStatusPhase.FAILING:
            self.nodes.abort_all(rnd, "Some node execution failed, auto-abort.")
            err: ErrorInfo | None = status.error or ErrorInfo(E.UNKNOWN_ERROR, status.message or "unknown error")
            if rnd.workflow.failure_node is not None:
                self._to(rnd, WorkflowStatusPhase.HANDLING_FAILURE_NODE, error=err)
            else:
                self._to(rnd, WorkflowStatusPhase.FAILED, error=err)
        elif phase == WorkflowStatusPhase.HANDLING_FAILURE_NODE:
            done, err = handle_failure_node(self.nodes, rnd)
            if done:
                self._to(rnd, WorkflowStatusPhase.FAILED, error=err)

    def _abort(self, rnd: ExecutionRound, cause: str) -> None:
        """Admin's TerminateExecution: stop running nodes, report ABORTED (FlytePropeller's HandleAbortedWorkflow)."""
        self.nodes.abort_all(rnd, cause)
        self._to(rnd, WorkflowStatusPhase.ABORTED)

    def _to(self, rnd: ExecutionRound, phase: WorkflowStatusPhase, error: ErrorInfo | None = None) -> None:
        """Transition and report it (FlytePropeller's TransitionToPhase)."""
        status, now = rnd.status, iso(rnd.now)
        if status.phase == phase:
            return
        exec_id = rnd.exec_id
        status.phase = phase
        if error is not None:
            status.error = error
        if phase == WorkflowStatusPhase.RUNNING:
            status.started_at = status.started_at or now
            rnd.events.workflow(exec_id, WfPhase.RUNNING)
        elif phase == WorkflowStatusPhase.SUCCEEDING:
            rnd.events.workflow(exec_id, WfPhase.SUCCEEDING)
        elif phase == WorkflowStatusPhase.SUCCESS:
            status.stopped_at = now
            rnd.events.workflow(exec_id, WfPhase.SUCCEEDED, output_uri=status.output_uri)
        elif phase in (WorkflowStatusPhase.FAILING, WorkflowStatusPhase.HANDLING_FAILURE_NODE,
                       WorkflowStatusPhase.FAILED):
            if phase == WorkflowStatusPhase.FAILED:
                status.stopped_at = now
            err = (status.error or ErrorInfo(E.UNKNOWN_ERROR, "Unknown error")).to_proto()
            # Flyte's API has no HandlingFailureNode phase: admin sees FAILING until the failure node is done.
            failed = phase == WorkflowStatusPhase.FAILED
            rnd.events.workflow(exec_id, WfPhase.FAILED if failed else WfPhase.FAILING, error=err)
        elif phase == WorkflowStatusPhase.ABORTED:
            status.stopped_at = now
            rnd.events.workflow(exec_id, WfPhase.ABORTED)

    def _may_launch(self, key: ExecutionKey) -> bool:
        """Whether this replica's lease on the execution lasts a third of a lease period more: the new owner
        of an expired lease looks for the task processes the old one started, so a process must be started
        well before the lease can expire (renewals come every third of a period)."""
        return self.leases is None or self.leases.holds(key, self.leases.seconds / 3)

    def _persist(self, key: ExecutionKey, status_json: str, done: bool, session: Session) -> None:
        written = changed_rows(session, self._write_status, {
            **_key_params(key), "new_status": status_json, "new_done": done, "new_updated_at": self.ctx.clock.now()})
        if self.leases is not None and written == 0:
            self._workflows.pop(key, None)
            raise LeaseLost(f"execution {'/'.join(key)} is driven by another replica now; this round is dropped")


def _exec_id(key: ExecutionKey):
    return execution_id(*key)
