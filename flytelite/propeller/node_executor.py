"""The NodeExecutor: walks a workflow's DAG from start-node and moves each node along (FlytePropeller's nodes/executor.go).

Passed nodes (succeeded, skipped, recovered) are walked through; a node whose upstream nodes are all
done gets its inputs resolved and written to `<data dir>/inputs.pb` and is queued; queued and
running nodes are handed to their kind's handler; failed attempts are retried within their budget
(user errors: the node's retries; system errors: config.engine.max_system_retries); an attempt
that outlives the task's timeout is stopped. Independent nodes progress in the same round.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import timedelta

from flyteidl.core import execution_pb2, literals_pb2

from flytelite.propeller.bindings import BindingError, resolve_bindings
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.nodes.registry import HandlerRegistry
from flytelite.propeller.phases import NODE_ACTIVE, NODE_FAILED, NODE_PASSED, NodePhase, node_event_phase
from flytelite.propeller.status import ErrorInfo, NodeStatus, iso, parse_iso
from flytelite.propeller.workflow import END_NODE, START_NODE, node_kind

USER, SYSTEM = execution_pb2.ExecutionError.USER, execution_pb2.ExecutionError.SYSTEM
# A node may pass several phases in one round (queued -> running, failed attempt -> next attempt).
MAX_STEPS_PER_ROUND = 8

_NEXT_PHASE = {
    EPhase.QUEUED: NodePhase.QUEUED,
    EPhase.RUNNING: NodePhase.RUNNING,
    EPhase.DYNAMIC_RUNNING: NodePhase.DYNAMIC_RUNNING,
    EPhase.SUCCESS: NodePhase.SUCCEEDING,
    EPhase.FAILED: NodePhase.FAILING,
    EPhase.TIMED_OUT: NodePhase.TIMING_OUT,
    EPhase.RETRYABLE_FAILURE: NodePhase.RETRYABLE_FAILURE,
    EPhase.SKIP: NodePhase.SKIPPED,
    EPhase.RECOVERED: NodePhase.RECOVERED,
}
# What a phase that needs finalizing settles into, and the event phase both report.
_SETTLES_INTO = {
    NodePhase.SUCCEEDING: NodePhase.SUCCEEDED,
    NodePhase.FAILING: NodePhase.FAILED,
    NodePhase.TIMING_OUT: NodePhase.TIMED_OUT,
}


@dataclass
class DagOutcome:
    complete: bool = False
    error: ErrorInfo | None = None


class NodeExecutor:
    def __init__(self, handlers: HandlerRegistry, max_system_retries: int):
        self.handlers = handlers
        self.max_system_retries = max_system_retries

    # -- the walk ---------------------------------------------------------------------------
    def walk(self, rnd: ExecutionRound) -> DagOutcome:
        wf, status = rnd.workflow, rnd.status
        rnd.parallelism = sum(
            1 for nid, st in status.nodes.items()
            if st.phase in NODE_ACTIVE and nid in wf.nodes
            and self.handlers.get(node_kind(wf.nodes[nid])).counts_for_parallelism
        )
        error: ErrorInfo | None = None
        blocked = False
        for node_id in wf.order:
            st = status.node(node_id)
            if st.phase not in NODE_PASSED and st.phase not in NODE_FAILED:
                blocked = not self.handle_node(rnd, node_id) or blocked
            if st.phase in NODE_FAILED:
                error = error or st.error or ErrorInfo("NodeFailed", f"node {node_id} failed", USER)
                if not wf.fail_after_executable_nodes_complete:
                    break
        if blocked and rnd.parallelism < rnd.max_parallelism:
            # A node waited for capacity that later nodes in this round freed.
            rnd.requeue_now = True
        if error is not None:
            still_running = any(s.phase in NODE_ACTIVE for s in status.nodes.values())
            if not (wf.fail_after_executable_nodes_complete and still_running):
                return DagOutcome(error=error)
        return DagOutcome(complete=status.node(END_NODE).phase in NODE_PASSED)

    def handle_node(self, rnd: ExecutionRound, node_id: str) -> bool:
        """Move one node along as far as it goes this round; False if it waited for parallelism."""
        node = rnd.workflow.nodes[node_id]
        handler = self.handlers.get(node_kind(node))
        nctx = NodeExecutionContext(rnd, node, rnd.status.node(node_id))
        was_active = nctx.status.phase in NODE_ACTIVE
        try:
            return self._steps(nctx, handler)
        finally:
            if handler.counts_for_parallelism:
                rnd.parallelism += (nctx.status.phase in NODE_ACTIVE) - was_active

    def _steps(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool:
        st = nctx.status
        for _ in range(MAX_STEPS_PER_ROUND):
            phase = st.phase
            if phase == NodePhase.NOT_YET_STARTED:
                started = self._start(nctx, handler)
                if started is None:
                    return False
                if not started:
                    return True
            elif phase in (NodePhase.QUEUED, NodePhase.RUNNING, NodePhase.DYNAMIC_RUNNING):
                if not self._execute(nctx, handler):
                    return True
            elif phase == NodePhase.RETRYABLE_FAILURE:
                self._retry(nctx, handler)
            elif phase in _SETTLES_INTO:
                if phase != NodePhase.SUCCEEDING:
                    handler.abort(nctx, st.message)
                handler.finalize(nctx)
                self._set_phase(nctx, _SETTLES_INTO[phase])
                return True
            else:
                return True
        return True

    def abort_all(self, rnd: ExecutionRound, reason: str) -> None:
        """Stop every node that holds something (FlytePropeller's AbortHandler), reporting ABORTED."""
        for node_id in rnd.workflow.order:
            st = rnd.status.nodes.get(node_id)
            if st is None or st.phase not in NODE_ACTIVE:
                continue
            node = rnd.workflow.nodes[node_id]
            handler = self.handlers.get(node_kind(node))
            nctx = NodeExecutionContext(rnd, node, st)
            handler.abort(nctx, reason)
            handler.finalize(nctx)
            st.message = f"aborted: {reason}"
            st.stopped_at = iso(rnd.now)
            self._event(nctx, execution_pb2.NodeExecution.ABORTED,
                        error=ErrorInfo("NodeAborted", reason, USER))

    # -- phases -----------------------------------------------------------------------------
    def _start(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool | None:
        """NotYetStarted -> Queued once the node can run (FlytePropeller's preExecute).

        True if queued, False if not ready (or skipped, or failed), None if it waits for parallelism.
        """
        rnd, st, node_id = nctx.round, nctx.status, nctx.node_id
        st.data_dir = posixpath.join(rnd.status.data_dir, node_id, "data")
        st.output_dir = posixpath.join(st.data_dir, str(st.attempts))
        if node_id == START_NODE:
            st.phase, st.queued_at = NodePhase.QUEUED, iso(rnd.now)
            return True
        ready = self._readiness(rnd, node_id)
        if ready == "skip":
            self._transition(nctx, PhaseInfo(EPhase.SKIP, reason="an upstream node was skipped"), NodePhase.SKIPPED)
            return False
        if ready != "ready":
            return False
        if handler.counts_for_parallelism and rnd.max_parallelism and rnd.parallelism >= rnd.max_parallelism:
            return None
        try:
            inputs = self._resolve_inputs(rnd, node_id)
        except BindingError as e:
            info = PhaseInfo.failure("BindingResolutionFailure", str(e), kind=SYSTEM)
            self._transition(nctx, info, NodePhase.FAILED)
            return False
        rnd.ctx.blobs.write_proto(nctx.input_uri, inputs)
        st.queued_at = iso(rnd.now)
        self._transition(nctx, PhaseInfo(EPhase.QUEUED, reason="node queued"), NodePhase.QUEUED)
        return True

    def _execute(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool:
        """Hand a queued/running node to its handler. True when the node should be looked at again now."""
        rnd, st = nctx.round, nctx.status
        info = handler.handle(nctx)
        timed_out = False
        if not info.terminal:
            timeout = self._timeout(nctx)
            started = parse_iso(st.last_attempt_started_at)
            if timeout and started is not None:
                left = (started + timeout - rnd.now).total_seconds()
                if left <= 0:
                    message = f"task execution timeout [{_fmt(timeout)}] expired"
                    handler.abort(nctx, message)
                    info = PhaseInfo.failure("TimeoutExpired", message, kind=USER, retryable=True)
                    timed_out = True
                else:
                    rnd.requeue_in(left)
        if info.phase == EPhase.RETRYABLE_FAILURE:
            if info.error is not None and info.error.is_system:
                st.system_failures += 1
            eligible, current, most = self._eligible(nctx, info.error)
            if not eligible:
                err = info.error
                if timed_out:
                    info = PhaseInfo(EPhase.TIMED_OUT, reason=err.message, error=err)
                else:
                    kind = "SYSTEM" if err.is_system else "USER"
                    info = PhaseInfo.failure(
                        f"RetriesExhausted|{err.code}",
                        f"[{current}/{most}] currentAttempt done. Last Error: {kind}::{err.message}", kind=err.kind)
        elif info.phase == EPhase.FAILED and info.error is not None and info.error.is_system:
            st.system_failures += 1
        new = _NEXT_PHASE[info.phase]
        if new in _SETTLES_INTO and not handler.finalize_required:
            new = _SETTLES_INTO[new]
        if new == st.phase:
            return False
        self._transition(nctx, info, new)
        return new in _SETTLES_INTO or new == NodePhase.RETRYABLE_FAILURE

    def _retry(self, nctx: NodeExecutionContext, handler: NodeHandler) -> None:
        """Close the failed attempt and set up the next one (FlytePropeller's handleRetryableFailure)."""
        st = nctx.status
        handler.abort(nctx, st.message)
        handler.finalize(nctx)
        st.attempts += 1
        st.output_dir = posixpath.join(st.data_dir, str(st.attempts))
        st.task = None
        st.phase = NodePhase.RUNNING
        st.last_attempt_started_at = iso(nctx.round.now)

    def _transition(self, nctx: NodeExecutionContext, info: PhaseInfo, new: NodePhase) -> None:
        st = nctx.status
        if new != NodePhase.RETRYABLE_FAILURE:
            event_phase = node_event_phase(_SETTLES_INTO.get(new, new))
            if event_phase is not None:
                self._event(nctx, event_phase, output_uri=info.output_uri, error=info.error,
                            deck_uri=info.deck_uri, task_node_metadata=info.task_node_metadata)
        if info.error is not None:
            st.error = info.error
        st.message = info.reason
        self._set_phase(nctx, new)

    def _set_phase(self, nctx: NodeExecutionContext, new: NodePhase) -> None:
        st, now = nctx.status, iso(nctx.round.now)
        st.phase = new
        if new == NodePhase.RUNNING:
            st.started_at = st.started_at or now
            st.last_attempt_started_at = st.last_attempt_started_at or now
        if new in NODE_PASSED or new in NODE_FAILED:
            st.stopped_at = now

    def _event(self, nctx: NodeExecutionContext, phase: int, *, output_uri: str = "", error: ErrorInfo | None = None,
               deck_uri: str = "", task_node_metadata=None) -> None:
        rnd, node = nctx.round, nctx.node
        target = None
        if node.WhichOneof("target") == "task_node":
            target = node.task_node.reference_id
        elif node.WhichOneof("target") == "workflow_node":
            ref = node.workflow_node
            target = ref.launchplan_ref if ref.HasField("launchplan_ref") else ref.sub_workflow_ref
        is_start = nctx.node_id == START_NODE
        rnd.events.node(
            rnd.exec_id, nctx.node_id, phase, spec_node_id=nctx.node_id, node_name=node.metadata.name,
            input_uri="" if is_start else nctx.input_uri,
            output_uri=output_uri, error=error.to_proto() if error is not None else None,
            target_entity=target, task_node_metadata=task_node_metadata, deck_uri=deck_uri,
        )

    # -- helpers ----------------------------------------------------------------------------
    def _readiness(self, rnd: ExecutionRound, node_id: str) -> str:
        skipped = False
        for up in rnd.workflow.upstream.get(node_id, ()):
            phase = rnd.status.node(up).phase
            if phase == NodePhase.SKIPPED:
                skipped = True
            elif phase not in NODE_PASSED:
                return "not-ready"
        return "skip" if skipped else "ready"

    def _resolve_inputs(self, rnd: ExecutionRound, node_id: str) -> literals_pb2.LiteralMap:
        wf = rnd.workflow
        cache: dict[str, literals_pb2.LiteralMap] = {}

        def outputs_of(upstream: str) -> literals_pb2.LiteralMap:
            if upstream not in cache:
                st = rnd.status.nodes.get(upstream)
                if st is None or st.phase not in NODE_PASSED:
                    raise BindingError(f"node {upstream} has not succeeded")
                uri = posixpath.join(st.output_dir, "outputs.pb")
                outputs = rnd.ctx.blobs.read_proto_if_exists(uri, literals_pb2.LiteralMap)
                if outputs is None:
                    raise BindingError(f"outputs of node {upstream} not found at {uri}")
                cache[upstream] = outputs
            return cache[upstream]

        def aliases(upstream: str) -> dict[str, str]:
            node = wf.nodes.get(upstream)
            return {a.alias: a.var for a in node.output_aliases} if node is not None else {}

        bindings = wf.end_bindings if node_id == END_NODE else wf.nodes[node_id].inputs
        return resolve_bindings(node_id, bindings, outputs_of, aliases, rnd.ctx.blobs)

    def _timeout(self, nctx: NodeExecutionContext) -> timedelta | None:
        node = nctx.node
        if node.HasField("metadata") and node.metadata.HasField("timeout"):
            t = node.metadata.timeout.ToTimedelta()
            if t > timedelta(0):
                return t
        task = nctx.task
        if task is not None and task.metadata.HasField("timeout"):
            t = task.metadata.timeout.ToTimedelta()
            if t > timedelta(0):
                return t
        return None

    def _eligible(self, nctx: NodeExecutionContext, err: ErrorInfo | None) -> tuple[bool, int, int]:
        st: NodeStatus = nctx.status
        if err is not None and err.is_system:
            # system_failures was already counted for this attempt.
            current = st.system_failures
            return current <= self.max_system_retries, current, self.max_system_retries
        current = st.attempts + 1 - st.system_failures
        most = 1
        node, task = nctx.node, nctx.task
        if node.metadata.HasField("retries") and node.metadata.retries.retries:
            most = node.metadata.retries.retries + 1
        elif task is not None and task.metadata.retries.retries:
            most = task.metadata.retries.retries + 1
        return current < most, current, most


def _fmt(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    return f"{seconds:g}s"
