"""The NodeExecutor: walks a workflow's DAG from start-node and moves each node along (FlytePropeller's nodes/executor.go).

Passed nodes (succeeded, skipped, recovered) are walked through; a node whose upstream nodes are all
done gets its inputs resolved and written to `<data dir>/inputs.pb` and is queued; queued and
running nodes are handed to their kind's handler; failed attempts are retried within their budget
(user errors: the node's retries; system errors: config.engine.max_system_retries); an attempt
that outlives the task's timeout is stopped. Independent nodes progress in the same round.
Nested kinds (branch, subworkflow, dynamic) hand their children back here as a nested DagScope
(walk_dag / abort_dag), so children go through exactly the same steps, ids and events as top-level nodes.
"""

from __future__ import annotations

import logging
import posixpath
from datetime import timedelta

from flyteidl.core import execution_pb2, literals_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER, ErrorInfo
from flytelite.idl.ids import END_NODE, START_NODE
from flytelite.logs import enter_node, leave_node
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.nodes.failure_node import set_error_input
from flytelite.propeller.nodes.handler import DagOutcome, EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.nodes.offloading import offloading_refusal
from flytelite.propeller.nodes.recovery import recover_node
from flytelite.propeller.nodes.registry import HandlerRegistry
from flytelite.propeller.nodes.resolve import BindingError, resolve_bindings
from flytelite.propeller.phases import (
    NODE_ACTIVE,
    NODE_DONE,
    NODE_FAILED,
    NODE_PASSED,
    NodeStatusPhase,
    node_event_phase,
)
from flytelite.propeller.scope import DagScope
from flytelite.propeller.status import NodeStatus, iso, parse_iso
from flytelite.propeller.workflow import node_kind

log = logging.getLogger(__name__)
# A node may pass several phases in one round (queued -> running, failed attempt -> next attempt).
MAX_STEPS_PER_ROUND = 8

_NEXT_PHASE = {
    EPhase.QUEUED: NodeStatusPhase.QUEUED,
    EPhase.RUNNING: NodeStatusPhase.RUNNING,
    EPhase.DYNAMIC_RUNNING: NodeStatusPhase.DYNAMIC_RUNNING,
    EPhase.SUCCESS: NodeStatusPhase.SUCCEEDING,
    EPhase.FAILED: NodeStatusPhase.FAILING,
    EPhase.TIMED_OUT: NodeStatusPhase.TIMING_OUT,
    EPhase.RETRYABLE_FAILURE: NodeStatusPhase.RETRYABLE_FAILURE,
    EPhase.SKIP: NodeStatusPhase.SKIPPED,
    EPhase.RECOVERED: NodeStatusPhase.RECOVERED,
}
# What a phase that needs finalizing settles into, and the event phase both report.
_SETTLES_INTO: dict[int, NodeStatusPhase] = {
    NodeStatusPhase.SUCCEEDING: NodeStatusPhase.SUCCEEDED,
    NodeStatusPhase.FAILING: NodeStatusPhase.FAILED,
    NodeStatusPhase.TIMING_OUT: NodeStatusPhase.TIMED_OUT,
}


class NodeExecutor:
    def __init__(self, handlers: HandlerRegistry, max_system_retries: int):
        self.handlers = handlers
        self.max_system_retries = max_system_retries

    # -- the walk ---------------------------------------------------------------------------
    def walk(self, rnd: ExecutionRound) -> DagOutcome:
        scope = self.top_scope(rnd)
        rnd.parallelism = self._slots_in_use(rnd, scope)
        return self.walk_dag(rnd, scope)

    @staticmethod
    def top_scope(rnd: ExecutionRound) -> DagScope:
        return DagScope(rnd.workflow, rnd.status.nodes, rnd.status.data_dir, inputs_uri=rnd.spec.inputs_uri)

    def walk_dag(self, rnd: ExecutionRound, scope: DagScope) -> DagOutcome:
        """One pass over one scope's nodes (FlytePropeller's RecursiveNodeHandler from its start node)."""
        wf = scope.dag
        error: ErrorInfo | None = None
        blocked = False
        for node_id in wf.order:
            # A node is given a status when it is first visited: those of a wide dynamic workflow beyond its max
            # parallelism have none (nothing in memory or in the persisted status) until they can start.
            st = scope.statuses.get(node_id)
            if st is None or st.phase == NodeStatusPhase.NOT_YET_STARTED:
                if st is not None and st.data_dir and self._readiness(scope, node_id) == "not-ready":
                    # Visited before and still waiting for an upstream node (most of a long chain, every round):
                    # nothing _start would do, without building its context.
                    continue
                if rnd.max_parallelism and rnd.parallelism >= rnd.max_parallelism \
                        and self.handlers.get(wf.kinds[node_id]).counts_for_parallelism:
                    # Max parallelism is taken: the node would wait in _start (the many nodes of a wide dynamic
                    # workflow beyond it, every round). A skip or a recovery waits for room too.
                    blocked = True
                    continue
                st = scope.status(node_id)
            if st.phase not in NODE_PASSED and st.phase not in NODE_FAILED:
                blocked = not self.handle_node(rnd, node_id, scope) or blocked
            if st.phase in NODE_FAILED:
                error = error or st.error or ErrorInfo(E.NODE_FAILED, f"node {scope.unique_id(node_id)} failed", USER)
                if not wf.fail_after_executable_nodes_complete:
                    break
        if blocked and rnd.parallelism < rnd.max_parallelism:
            # A node waited for capacity that later nodes in this round freed.
            rnd.requeue_now = True
        if error is not None:
            still_running = any(s.phase in NODE_ACTIVE for s in scope.statuses.values())
            if not (wf.fail_after_executable_nodes_complete and still_running):
                return DagOutcome(error=error)
        return DagOutcome(complete=scope.complete())

    def handle_node(self, rnd: ExecutionRound, node_id: str, scope: DagScope | None = None) -> bool:
        """Move one node along as far as it goes this round; False if it waited for parallelism."""
        nctx = self.context(rnd, scope or self.top_scope(rnd), node_id)
        handler = self.handlers.get(node_kind(nctx.node))
        held = _holds_slot(handler, nctx.status)
        try:
            return self._steps(nctx, handler)
        finally:
            rnd.parallelism += _holds_slot(handler, nctx.status) - held

    def context(self, rnd: ExecutionRound, scope: DagScope, node_id: str) -> NodeExecutionContext:
        return NodeExecutionContext(rnd, scope.dag.nodes[node_id], scope.status(node_id), scope=scope, executor=self)

    def _slots_in_use(self, rnd: ExecutionRound, scope: DagScope) -> int:
        """Nodes holding a slot of max parallelism, at every level of nesting."""
        used = 0
        active = [(node_id, st) for node_id, st in scope.statuses.items() if st.phase in NODE_ACTIVE]
        for node_id, st in active:
            if node_id not in scope.dag.nodes:
                continue
            nctx = self.context(rnd, scope, node_id)
            handler = self.handlers.get(node_kind(nctx.node))
            used += _holds_slot(handler, st)
            child = handler.child_scope(nctx)
            if child is not None:
                used += self._slots_in_use(rnd, child)
        return used

    def _steps(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool:
        tokens = enter_node(nctx.node_id, nctx.status.attempts)
        try:
            return self._step_through(nctx, handler)
        finally:
            leave_node(tokens)

    def _step_through(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool:
        st = nctx.status
        for _ in range(MAX_STEPS_PER_ROUND):
            phase = st.phase
            if phase == NodeStatusPhase.NOT_YET_STARTED:
                started = self._start(nctx, handler)
                if started is None:
                    return False
                if not started:
                    return True
            elif phase in (NodeStatusPhase.QUEUED, NodeStatusPhase.RUNNING, NodeStatusPhase.DYNAMIC_RUNNING):
                if not self._execute(nctx, handler):
                    return True
            elif phase == NodeStatusPhase.RETRYABLE_FAILURE:
                self._retry(nctx, handler)
            elif phase in _SETTLES_INTO:
                if phase != NodeStatusPhase.SUCCEEDING:
                    handler.abort(nctx, st.message)
                handler.finalize(nctx)
                self._set_phase(nctx, _SETTLES_INTO[phase])
                return True
            else:
                return True
        return True

    def abort_all(self, rnd: ExecutionRound, reason: str) -> None:
        """Stop every node that holds something (FlytePropeller's AbortHandler), reporting ABORTED."""
        failure = rnd.workflow.failure_node
        self.abort_dag(rnd, self.top_scope(rnd), reason,
                       [*rnd.workflow.order, *([failure.id] if failure is not None else [])])

    def abort_dag(self, rnd: ExecutionRound, scope: DagScope, reason: str, node_ids: list[str] | None = None) -> None:
        """Abort one scope's active nodes (nested kinds abort their own children first), reporting ABORTED."""
        for node_id in node_ids if node_ids is not None else scope.dag.order:
            st = scope.statuses.get(node_id)
            if st is None or st.phase not in NODE_ACTIVE:
                continue
            nctx = self.context(rnd, scope, node_id)
            handler = self.handlers.get(node_kind(nctx.node))
            handler.abort(nctx, reason)
            handler.finalize(nctx)
            st.message = f"aborted: {reason}"
            st.stopped_at = iso(rnd.now)
            self._event(nctx, execution_pb2.NodeExecution.ABORTED,
                        error=ErrorInfo(E.NODE_ABORTED, reason, USER))

    def handle_subnode(self, nctx: NodeExecutionContext, handler: NodeHandler) -> None:
        """Move a node that is in no DAG (an array item) as far as it goes this round.

        Its caller owns its data dir and inputs: it is queued without input resolution (FlytePropeller
        nils an array sub-node's input bindings), then takes the same steps as any node.
        """
        st = nctx.status
        if st.phase == NodeStatusPhase.NOT_YET_STARTED:
            st.output_dir = st.implied_output_dir()
            st.queued_at = iso(nctx.round.now)
            self._transition(nctx, PhaseInfo(EPhase.QUEUED, reason="node queued"), NodeStatusPhase.QUEUED)
        self._steps(nctx, handler)

    # -- phases -----------------------------------------------------------------------------
    def _start(self, nctx: NodeExecutionContext, handler: NodeHandler) -> bool | None:
        """NotYetStarted -> Queued once the node can run (FlytePropeller's preExecute).

        True if queued, False if not ready (or skipped, or failed), None if it waits for parallelism.
        """
        rnd, st = nctx.round, nctx.status
        scope, spec_id = nctx.scope or self.top_scope(rnd), nctx.node.id
        st.data_dir = scope.node_data_dir(spec_id)
        st.output_dir = st.implied_output_dir()
        if spec_id == START_NODE:
            st.phase, st.queued_at = NodeStatusPhase.QUEUED, iso(rnd.now)
            return True
        ready = self._readiness(scope, spec_id)
        if ready == "skip":
            self._transition(nctx, PhaseInfo(EPhase.SKIP, reason="an upstream node was skipped"),
                             NodeStatusPhase.SKIPPED)
            return False
        if ready != "ready":
            return False
        recovered = recover_node(nctx) if rnd.spec.recover_from else None
        if recovered is not None:
            self._transition(nctx, recovered, NodeStatusPhase.RECOVERED)
            return False
        if handler.counts_for_parallelism and rnd.max_parallelism and rnd.parallelism >= rnd.max_parallelism:
            return None
        try:
            inputs = self._resolve_inputs(rnd, scope, spec_id)
        except BindingError as e:
            info = PhaseInfo.failure(E.BINDING_RESOLUTION_FAILURE, str(e), kind=SYSTEM)
            self._transition(nctx, info, NodeStatusPhase.FAILED)
            return False
        if scope.failure_error is not None:
            set_error_input(inputs, spec_id, scope.failure_error)
        refusal = offloading_refusal(rnd.ctx.config.literal_offloading, inputs, nctx.task) \
            if nctx.node.HasField("task_node") else None
        if refusal is not None:
            self._transition(nctx, refusal, NodeStatusPhase.FAILED)
            return False
        rnd.ctx.blobs.write_unread_proto(nctx.input_uri, inputs)
        st.queued_at = iso(rnd.now)
        self._transition(nctx, PhaseInfo(EPhase.QUEUED, reason="node queued"), NodeStatusPhase.QUEUED)
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
                    info = PhaseInfo.failure(E.TIMEOUT_EXPIRED, message, kind=USER, retryable=True)
                    timed_out = True
                else:
                    rnd.requeue_in(left)
        if info.phase == EPhase.RETRYABLE_FAILURE:
            if info.error is not None and info.error.is_system:
                st.system_failures += 1
            eligible, current, most = self._eligible(nctx, info.error)
            if not eligible:
                err = info.error
                assert err is not None, "a retryable failure carries its error"
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
        # A dynamic node that just compiled its children starts them in the same round.
        return new in _SETTLES_INTO or new in (NodeStatusPhase.RETRYABLE_FAILURE,
                                                NodeStatusPhase.DYNAMIC_RUNNING)

    def _retry(self, nctx: NodeExecutionContext, handler: NodeHandler) -> None:
        """Close the failed attempt and set up the next one (FlytePropeller's handleRetryableFailure)."""
        st = nctx.status
        handler.abort(nctx, st.message)
        handler.finalize(nctx)
        st.attempts += 1
        st.output_dir = st.implied_output_dir()
        st.task = None
        # A new attempt of a nested node runs its children afresh (their ids carry the attempt).
        st.sub_nodes, st.branch_taken, st.dynamic_phase = {}, None, None
        st.workflow_phase, st.workflow_error = None, None
        st.phase = NodeStatusPhase.RUNNING
        st.last_attempt_started_at = iso(nctx.round.now)

    def _transition(self, nctx: NodeExecutionContext, info: PhaseInfo, new: NodeStatusPhase) -> None:
        st = nctx.status
        if new != NodeStatusPhase.RETRYABLE_FAILURE:
            event_phase = node_event_phase(_SETTLES_INTO.get(new, new))
            if event_phase is not None:
                self._event(nctx, event_phase, output_uri=info.output_uri, error=info.error,
                            deck_uri=info.deck_uri, task_node_metadata=info.task_node_metadata,
                            workflow_node_metadata=info.workflow_node_metadata)
        if info.error is not None:
            st.error = info.error
        st.message = info.reason
        self._set_phase(nctx, new)

    def _set_phase(self, nctx: NodeExecutionContext, new: NodeStatusPhase) -> None:
        st, now = nctx.status, iso(nctx.round.now)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s -> %s", NodeStatusPhase(st.phase).name, new.name)
        st.phase = new
        if new == NodeStatusPhase.RUNNING:
            if not st.started_at:
                self._make_successors_folders(nctx)
            st.started_at = st.started_at or now
            st.last_attempt_started_at = st.last_attempt_started_at or now
        if new in NODE_DONE:
            st.stopped_at = now
            _forget_the_run(st)

    def _make_successors_folders(self, nctx: NodeExecutionContext) -> None:
        """Make the data folders of the nodes after a node that starts running, while it runs, so that making
        them (two new folders a successor, slow on a busy disk) does not stand between a task's exit and its
        successor's start. A remote store has no folders. One that cannot be made now is left to the
        successor's start, which says why. A map task's item (in no DAG) has none: it builds no scope."""
        dag = nctx.scope.dag if nctx.scope is not None else nctx.round.workflow
        successors = [node_id for node_id in dag.downstream.get(nctx.node.id, ()) if node_id != END_NODE]
        if not successors:
            return
        scope = nctx.scope or self.top_scope(nctx.round)
        for node_id in successors:
            try:
                nctx.round.ctx.blobs.makedirs(scope.node_data_dir(node_id))
            except OSError:
                pass

    def _event(self, nctx: NodeExecutionContext, phase: int, *, output_uri: str = "", error: ErrorInfo | None = None,
               deck_uri: str = "", task_node_metadata=None, workflow_node_metadata=None) -> None:
        rnd, node = nctx.round, nctx.node
        target = None
        if node.WhichOneof("target") == "task_node":
            target = node.task_node.reference_id
        elif node.WhichOneof("target") == "workflow_node":
            ref = node.workflow_node
            target = ref.launchplan_ref if ref.HasField("launchplan_ref") else ref.sub_workflow_ref
        is_start = node.id == START_NODE
        parent = nctx.scope.parent if nctx.scope is not None else None
        # As FlytePropeller's ToNodeExecutionEvent: subworkflow nodes are parents; a dynamic node is
        # dynamic from the moment it has futures, and a parent once it reports its compiled workflow.
        is_parent = (node.WhichOneof("target") == "workflow_node" and node.workflow_node.HasField("sub_workflow_ref")) \
            or (task_node_metadata is not None and task_node_metadata.HasField("dynamic_workflow"))
        rnd.events.node(
            rnd.exec_id, nctx.node_id, phase, spec_node_id=node.id, node_name=node.metadata.name,
            input_uri="" if is_start else nctx.input_uri,
            output_uri=output_uri, error=error.to_proto() if error is not None else None,
            target_entity=target, task_node_metadata=task_node_metadata, deck_uri=deck_uri,
            workflow_node_metadata=workflow_node_metadata,
            parent_node_id=parent.unique_id if parent is not None else "",
            retry_group=str(parent.attempt) if parent is not None else "",
            is_parent=is_parent, is_dynamic=bool(nctx.status.dynamic_phase),
            is_in_dynamic_chain=parent is not None and parent.in_dynamic_chain,
            is_array=node.WhichOneof("target") == "array_node",
        )

    # -- helpers ----------------------------------------------------------------------------
    def _readiness(self, scope: DagScope, node_id: str) -> str:
        skipped = False
        for up in scope.dag.upstream.get(node_id, ()):
            phase = scope.upstream_status(up).phase
            if phase == NodeStatusPhase.SKIPPED:
                skipped = True
            elif phase not in NODE_PASSED:
                return "not-ready"
        return "skip" if skipped else "ready"

    def _resolve_inputs(self, rnd: ExecutionRound, scope: DagScope, node_id: str) -> literals_pb2.LiteralMap:
        wf = scope.dag
        cache: dict[str, literals_pb2.LiteralMap] = {}

        def outputs_of(upstream: str) -> literals_pb2.LiteralMap:
            if upstream not in cache:
                # A branch arm binds to nodes of the scope around its branch.
                owner = scope.owner_of(upstream)
                st = owner[0].statuses.get(upstream) if owner is not None else None
                if st is None or st.phase not in NODE_PASSED:
                    raise BindingError(f"node {upstream} has not succeeded")
                uri = posixpath.join(st.output_dir, "outputs.pb")
                outputs = rnd.outputs_read.get(uri)
                if outputs is None:
                    outputs = rnd.ctx.blobs.read_proto_if_exists(uri, literals_pb2.LiteralMap)
                    if outputs is None:
                        raise BindingError(f"outputs of node {upstream} not found at {uri}")
                    rnd.outputs_read[uri] = outputs
                cache[upstream] = outputs
            return cache[upstream]

        def aliases(upstream: str) -> dict[str, str]:
            owner = scope.owner_of(upstream)
            return {a.alias: a.var for a in owner[1].output_aliases} if owner is not None else {}

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


def _holds_slot(handler: NodeHandler, st: NodeStatus) -> bool:
    # A dynamic node running its children holds no slot itself (else max_parallelism 1 would deadlock).
    return (handler.counts_for_parallelism and st.phase in NODE_ACTIVE
            and st.phase != NodeStatusPhase.DYNAMIC_RUNNING)


def _fmt(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    return f"{seconds:g}s"


def _forget_the_run(st: NodeStatus) -> None:
    """What a done node needed only while it ran, dropped (as FlytePropeller's NodeStatus.UpdatePhase does): the
    status is persisted whole every round, and in a long workflow its done nodes would make most of it. Kept:
    the phase, attempts, error and message, when it stopped, and its data folders, which downstream nodes read
    its outputs from."""
    st.queued_at = st.started_at = st.last_attempt_started_at = None
    st.task, st.sub_nodes, st.array = None, {}, None
    st.branch_taken = st.dynamic_phase = st.workflow_phase = None
    st.workflow_error = None
