"""The task node handler: runs the node's task through the plugin registered for its task type.

It owns the task-level view: building the plugin's TaskExecutionContext, reporting
TaskExecutionEvents when the plugin's phase (or phase version) changes, and turning the plugin's
result into the node's phase (outputs checked, errors passed on for the retry policy).
Cached tasks ask the catalog first (cache.py): a hit succeeds with the cached outputs without
starting the plugin and without a task execution, as in FlytePropeller; a success is stored.
"""

from __future__ import annotations

import posixpath

from flyteidl.core import catalog_pb2, execution_pb2, tasks_pb2
from flyteidl.event import event_pb2

from flytelite.catalog import MAX_HEARTBEAT_INTERVAL, is_cacheable
from flytelite.errors import InvalidArgument
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.machinery.core import PluginPhase, TaskExecutionContext, unique_key
from flytelite.plugins.registry import PluginNotFound, PluginRegistry
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.nodes.task import cache as task_cache
from flytelite.propeller.phases import NodeStatusPhase
from flytelite.propeller.status import TaskStatus

TaskPhase = execution_pb2.TaskExecution.Phase


class TaskHandler(NodeHandler):
    kind = "task"
    finalize_required = True
    counts_for_parallelism = True

    def __init__(self, plugins: PluginRegistry):
        self.plugins = plugins

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        task = nctx.task
        if task is None:
            ref = nctx.node.task_node.reference_id
            return PhaseInfo.failure(E.TASK_NOT_FOUND, f"node {nctx.node_id} runs task {ref.name}@{ref.version}, "
                                     "which the compiled workflow does not contain", kind=SYSTEM)
        try:
            plugin = self.plugins.get(task, nctx.round.key, nctx.round.spec.task_plugins)
        except PluginNotFound as e:
            return PhaseInfo.failure(E.UNSUPPORTED_TASK_TYPE, f"task {task.id.name}: {e}", kind=USER)
        tstatus = nctx.status.task
        if tstatus is None:
            tstatus = nctx.status.task = TaskStatus()
        rnd = nctx.round
        cache_run = _cache_run(nctx, task) if is_cacheable(task) else None
        cached: event_pb2.TaskNodeMetadata | None = None
        if cache_run is not None:
            state = task_cache.CacheState.from_dict(tstatus.cache)
            try:
                check = task_cache.before_run(cache_run, state)
            except InvalidArgument as e:
                return PhaseInfo.failure(E.CACHE_KEY_ERROR, str(e), kind=USER)
            finally:
                tstatus.cache = state.to_dict()
            if check.recheck_after is not None:
                rnd.requeue_in(check.recheck_after)
            if check.action == task_cache.CacheAction.HIT:
                return PhaseInfo.success(output_uri=nctx.outputs_uri, task_node_metadata=check.metadata)
            if check.action == task_cache.CacheAction.WAIT:
                # The node stays queued (no transition, no event): say why in its status, as FlytePropeller does.
                nctx.status.message = task_cache.WAITING_REASON
                return PhaseInfo(EPhase.QUEUED, reason=task_cache.WAITING_REASON, task_node_metadata=check.metadata)
            cached = check.metadata
        tctx = self._task_context(nctx, tstatus, task)
        info = plugin.handle(tctx)
        if info.requeue_now:
            rnd.requeue_now = True
        if info.poll_after is not None:
            rnd.requeue_in(info.poll_after)

        # Looked up once: a stat per item and check adds up in a 10,000-item map task.
        wrote_outputs = info.phase == PluginPhase.SUCCESS and nctx.blobs.exists(nctx.outputs_uri)
        if info.phase == PluginPhase.SUCCESS and info.futures_uri:
            pass  # A dynamic task: its outputs come later, from the workflow it wrote (nodes/dynamic/).
        elif info.phase == PluginPhase.SUCCESS and len(task.interface.outputs.variables) and not wrote_outputs:
            info = info.failure(E.OUTPUTS_NOT_FOUND, f"task {task.id.name} succeeded but wrote no outputs.pb to "
                                f"{nctx.output_dir}", kind=SYSTEM, retryable=True, logs=info.logs)

        output_uri = nctx.outputs_uri if info.phase == PluginPhase.SUCCESS and wrote_outputs else ""
        self._report(nctx, tstatus, task, info.phase.event_phase, info.version, logs=info.logs,
                     reason=info.reason, output_uri=output_uri,
                     error=info.error.to_proto() if info.error else None, plugin_id=plugin.id,
                     custom_info=info.custom_info)

        if info.phase == PluginPhase.SUCCESS:
            deck = posixpath.join(nctx.output_dir, "deck.html")
            if cache_run is not None and not info.futures_uri:
                state = task_cache.CacheState.from_dict(tstatus.cache)
                cached = task_cache.after_success(cache_run, state)
                tstatus.cache = state.to_dict()
            return PhaseInfo.success(output_uri=output_uri, deck_uri=deck if nctx.blobs.exists(deck) else "",
                                     task_node_metadata=cached or _cache_disabled())
        if info.phase in (PluginPhase.RETRYABLE_FAILURE, PluginPhase.PERMANENT_FAILURE):
            return PhaseInfo(EPhase.RETRYABLE_FAILURE if info.phase == PluginPhase.RETRYABLE_FAILURE else EPhase.FAILED,
                             reason=info.reason, error=info.error)
        return PhaseInfo(EPhase.RUNNING, reason=info.reason, task_node_metadata=cached or _cache_disabled())

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        tstatus, task = nctx.status.task, nctx.task
        _release_cache(nctx)
        if tstatus is None or task is None or not tstatus.plugin:
            return
        try:
            plugin = self.plugins.get(task, nctx.round.key, nctx.round.spec.task_plugins)
        except PluginNotFound:
            return
        plugin.abort(self._task_context(nctx, tstatus, task))
        if tstatus.phase not in (TaskPhase.SUCCEEDED, TaskPhase.FAILED, TaskPhase.ABORTED):
            self._report(nctx, tstatus, task, TaskPhase.ABORTED, 0, reason=reason, plugin_id=plugin.id,
                         error=execution_pb2.ExecutionError(code=E.TASK_ABORTED, message=reason, kind=USER))

    def finalize(self, nctx: NodeExecutionContext) -> None:
        tstatus, task = nctx.status.task, nctx.task
        if nctx.status.phase not in (NodeStatusPhase.QUEUED, NodeStatusPhase.RUNNING):
            # A node that is done (or retried) frees its key at once instead of letting it expire. A node
            # still running past its task (a dynamic node's children) keeps it until the node ends, as in Flyte.
            _release_cache(nctx)
        if tstatus is None or task is None or not tstatus.plugin:
            return
        try:
            plugin = self.plugins.get(task, nctx.round.key, nctx.round.spec.task_plugins)
        except PluginNotFound:
            return
        plugin.finalize(self._task_context(nctx, tstatus, task))

    def cache_heartbeat(self, nctx: NodeExecutionContext) -> None:
        """Keep a cache-serialized node's reservation while the node runs on past its task (a dynamic
        node's children): call on every evaluation until the node ends."""
        tstatus, task = nctx.status.task, nctx.task
        if tstatus is None or not tstatus.cache or task is None:
            return
        state = task_cache.CacheState.from_dict(tstatus.cache)
        check = task_cache.before_run(_cache_run(nctx, task), state)
        tstatus.cache = state.to_dict()
        if check.recheck_after is not None:
            nctx.round.requeue_in(check.recheck_after)

    def cache_outputs(self, nctx: NodeExecutionContext) -> event_pb2.TaskNodeMetadata | None:
        """Cache the node's outputs.pb once the node succeeds after its task did (a dynamic node); the
        TaskNodeMetadata of its SUCCEEDED event, None when the task is not cached."""
        tstatus, task = nctx.status.task, nctx.task
        if tstatus is None or task is None or not is_cacheable(task):
            return None
        state = task_cache.CacheState.from_dict(tstatus.cache)
        metadata = task_cache.after_success(_cache_run(nctx, task), state)
        tstatus.cache = state.to_dict()
        return metadata

    def _task_context(self, nctx: NodeExecutionContext, tstatus: TaskStatus,
                      task: tasks_pb2.TaskTemplate) -> TaskExecutionContext:
        rnd = nctx.round
        return TaskExecutionContext(
            ctx=rnd.ctx, key=rnd.key, spec=rnd.spec, workflow_id=rnd.workflow.id, node_id=nctx.node_id,
            attempt=nctx.attempt, task=task, input_uri=nctx.input_uri, output_prefix=nctx.output_dir,
            state=tstatus.plugin, wake=rnd.wake, may_launch=rnd.may_launch,
        )

    def _report(self, nctx, tstatus: TaskStatus, task, phase: int, version: int, *, plugin_id: str,
                logs=None, reason: str = "", output_uri: str = "", error=None, custom_info=None) -> None:
        """Send a TaskExecutionEvent when the phase or its version changed since the last one."""
        if (phase, version) == (tstatus.phase, tstatus.phase_version):
            return
        rnd = nctx.round
        rnd.events.task(
            rnd.exec_id, nctx.node_id, task.id, nctx.attempt, phase, version, task_type=task.type,
            input_uri=nctx.input_uri, output_uri=output_uri, error=error, logs=logs, reason=reason,
            generated_name=unique_key(rnd.key, nctx.node_id, nctx.attempt),
            plugin_identifier=plugin_id, custom_info=custom_info,
        )
        tstatus.phase, tstatus.phase_version = phase, version


def _cache_run(nctx: NodeExecutionContext, task: tasks_pb2.TaskTemplate) -> task_cache.CacheRun:
    rnd = nctx.round
    engine = rnd.ctx.config.engine
    # A reservation lasts three heartbeat intervals of DataCatalog's longest (30 s) and its owner renews it
    # twice per lease (at most every 5 s): a replica that died leaves it held for at least 25 s after its
    # last renewal, longer than the takeover of its execution (lease expiry plus a sweep: 20 s by default,
    # 3.5 s in the fault tests) with room for rounds late on a loaded machine. So the new owner keeps the
    # key instead of another execution computing it again (tests/e2e/test_replica_faults.py).
    renew = min(engine.lease_seconds, MAX_HEARTBEAT_INTERVAL.total_seconds()) / 2
    return task_cache.CacheRun(
        ctx=rnd.ctx, task=task, outputs_uri=nctx.outputs_uri, execution_id=rnd.exec_id,
        inputs=nctx.read_inputs,  # an array item's own values, not the array node's lists
        node_id=nctx.node_id, attempt=nctx.attempt, overwrite=rnd.spec.overwrite_cache, renew_seconds=renew,
    )


def _release_cache(nctx: NodeExecutionContext) -> None:
    tstatus, task = nctx.status.task, nctx.task
    if tstatus is not None and tstatus.cache and task is not None:
        state = task_cache.CacheState.from_dict(tstatus.cache)
        task_cache.release(_cache_run(nctx, task), state)
        tstatus.cache = state.to_dict()


def _cache_disabled() -> event_pb2.TaskNodeMetadata:
    return event_pb2.TaskNodeMetadata(cache_status=catalog_pb2.CACHE_DISABLED)
