"""The dynamic node handler: task nodes whose task writes futures.pb (FlytePropeller's nodes/dynamic).

It wraps the task handler, as in Flyte, so every task node goes through it. While the parent task
runs, the task handler does the work. When the task succeeds having written a DynamicJobSpec
(`futures.pb`) instead of outputs, the spec is compiled at run time (workflow.py) and the node
reports DYNAMIC_RUNNING with the compiled workflow in its event (admin keeps it for
GetNodeExecutionData, so FlyteRemote can map the children to it). The children then run as a
nested scope under the node: ids `<node id>-<attempt>-<child id>`, data under the node's output dir,
statuses inside the node's status. The node succeeds with the outputs its spec's bindings name, or
fails with the error of the child that failed.
"""

from __future__ import annotations

import posixpath

from flyteidl.core import catalog_pb2
from flyteidl.event import event_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.propeller.nodes.dynamic.workflow import (
    COMPILED_NAME,
    FUTURES_NAME,
    DynamicBuildError,
    build_dynamic_workflow,
    forget_dynamic_workflow,
    load_dynamic_workflow,
)
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.nodes.subworkflow.handler import copy_end_outputs
from flytelite.propeller.nodes.task.handler import TaskHandler
from flytelite.propeller.scope import DagScope

# NodeStatus.dynamic_phase once the futures were compiled (Flyte's DynamicNodePhaseExecuting).
EXECUTING = "executing"


class DynamicNodeHandler(NodeHandler):
    kind = "task"
    finalize_required = True
    counts_for_parallelism = True

    def __init__(self, task_handler: TaskHandler):
        self.task_handler = task_handler

    def setup(self) -> None:
        self.task_handler.setup()

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        st = nctx.status
        if st.dynamic_phase != EXECUTING:
            info = self.task_handler.handle(nctx)
            futures = posixpath.join(nctx.output_dir, FUTURES_NAME)
            if info.phase != EPhase.SUCCESS or not nctx.blobs.exists(futures):
                return info
            return self._produce_workflow(nctx, futures)
        scope = self.child_scope(nctx)
        if scope is None:
            return PhaseInfo.failure(E.DYNAMIC_WORKFLOW_NOT_FOUND, f"the compiled dynamic workflow of node "
                                     f"{nctx.node_id} is missing from {nctx.output_dir}", kind=SYSTEM)
        # A cache-serialized dynamic task holds its cache reservation until the whole node ends.
        self.task_handler.cache_heartbeat(nctx)
        outcome = nctx.nested.walk_dag(nctx.round, scope)
        if outcome.error is not None:
            return PhaseInfo(EPhase.FAILED, reason=outcome.error.message, error=outcome.error)
        if not outcome.complete:
            return PhaseInfo(EPhase.DYNAMIC_RUNNING, reason="running the dynamic workflow")
        info = copy_end_outputs(nctx, scope, "DynamicWorkflow")
        if info.phase == EPhase.SUCCESS:
            # A cached dynamic task caches what its workflow produced (FlytePropeller's WriteCatalogCache).
            info.task_node_metadata = self.task_handler.cache_outputs(nctx)
        return info

    def _produce_workflow(self, nctx: NodeExecutionContext, futures: str) -> PhaseInfo:
        # The parent task is done: release what it holds before its children run (finalizeParentNode).
        self.task_handler.finalize(nctx)
        try:
            closure = build_dynamic_workflow(nctx, futures)
        except DynamicBuildError as e:
            return PhaseInfo.failure(E.DYNAMIC_WORKFLOW_BUILD_FAILED, str(e), kind=USER)
        nctx.status.dynamic_phase = EXECUTING
        meta = event_pb2.TaskNodeMetadata(cache_status=catalog_pb2.CACHE_DISABLED)
        meta.dynamic_workflow.id.CopyFrom(closure.primary.template.id)
        meta.dynamic_workflow.compiled_workflow.CopyFrom(closure)
        meta.dynamic_workflow.dynamic_job_spec_uri = futures
        return PhaseInfo(EPhase.DYNAMIC_RUNNING, reason="dynamic workflow compiled", task_node_metadata=meta)

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        if nctx.status.dynamic_phase != EXECUTING:
            self.task_handler.abort(nctx, reason)
            return
        scope = self.child_scope(nctx)
        if scope is not None:
            nctx.nested.abort_dag(nctx.round, scope, reason)

    def finalize(self, nctx: NodeExecutionContext) -> None:
        self.task_handler.finalize(nctx)
        if nctx.status.dynamic_phase == EXECUTING:
            forget_dynamic_workflow(posixpath.join(nctx.output_dir, COMPILED_NAME))

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        if nctx.status.dynamic_phase != EXECUTING:
            return None
        dag = load_dynamic_workflow(nctx.blobs, posixpath.join(nctx.output_dir, COMPILED_NAME))
        if dag is None:
            return None
        return nctx.dag_scope.child(dag, nctx.status, nctx.node.id, dynamic=True)
