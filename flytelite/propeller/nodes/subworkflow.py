"""The inline subworkflow node handler (FlytePropeller's nodes/subworkflow/subworkflow.go).

A workflow node with a sub_workflow_ref runs that compiled subworkflow from the closure as a nested
scope: its start-node outputs the node's inputs, its nodes' statuses live in this node's status and
their data under this node's output dir, their execution ids derive from this node's. The node
succeeds with the subworkflow's end-node outputs, or fails with the error of the child that failed.
(Launch-plan references are another kind: nodes/launch_plan.py.)
"""

from __future__ import annotations

import posixpath

from flyteidl.core import execution_pb2

from flytelite.idl.ids import describe
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.scope import DagScope
from flytelite.propeller.workflow import END_NODE

SYSTEM = execution_pb2.ExecutionError.SYSTEM
SUBWORKFLOW_FAILED = "SubWorkflowExecutionFailed"


class SubworkflowHandler(NodeHandler):
    kind = "subworkflow"
    # Failing must abort the children still running (finalize_required routes FAILED through FAILING).
    finalize_required = True

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        scope = self.child_scope(nctx)
        if scope is None:
            ref = nctx.node.workflow_node.sub_workflow_ref
            return PhaseInfo.failure(SUBWORKFLOW_FAILED, f"failed to find sub workflow with ID [{describe(ref)}] "
                                     f"in the compiled workflow of node {nctx.node_id}", kind=SYSTEM)
        outcome = nctx.executor.walk_dag(nctx.round, scope)
        if outcome.error is not None:
            return PhaseInfo(EPhase.FAILED, reason=outcome.error.message, error=outcome.error)
        if not outcome.complete:
            return PhaseInfo.running()
        return copy_end_outputs(nctx, scope, "Subworkflow")

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        scope = self.child_scope(nctx)
        if scope is not None:
            nctx.executor.abort_dag(nctx.round, scope, reason)

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        dag = nctx.scope.subworkflow(nctx.node.workflow_node.sub_workflow_ref)
        if dag is None:
            return None
        return nctx.scope.child(dag, nctx.status, nctx.node.id, inputs_uri=nctx.input_uri)


def copy_end_outputs(nctx: NodeExecutionContext, scope: DagScope, what: str) -> PhaseInfo:
    """Succeed with the nested workflow's outputs (its end-node's) copied to the node's own outputs.pb."""
    if not scope.dag.end_bindings:
        return PhaseInfo.success()
    source = posixpath.join(scope.status(END_NODE).output_dir, "outputs.pb")
    if not nctx.blobs.exists(source):
        return PhaseInfo.failure(SUBWORKFLOW_FAILED, f"{what} is expected to produce outputs but no outputs file "
                                 f"was written to {source}.", kind=SYSTEM)
    nctx.blobs.write_bytes(nctx.outputs_uri, nctx.blobs.read_bytes(source))
    return PhaseInfo.success(output_uri=nctx.outputs_uri)
