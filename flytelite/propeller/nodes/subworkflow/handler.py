"""The inline subworkflow node handler (FlytePropeller's nodes/subworkflow/subworkflow.go).

A workflow node with a sub_workflow_ref runs that compiled subworkflow from the closure as a nested
scope: its start-node outputs the node's inputs, its nodes' statuses live in this node's status and
their data under this node's output dir, their execution ids derive from this node's. The node
succeeds with the subworkflow's end-node outputs. When the subworkflow fails the node stays running
while it fails as a workflow does (Flyte's WorkflowNodePhaseFailing): the subworkflow's other nodes
are aborted, its own failure node (`@workflow(on_failure=...)`) runs with the error, and then the
node fails, with the subworkflow's error or, if the failure node failed, with the failure node's.
(Launch-plan references are another kind: nodes/launch_plan/.)
"""

from __future__ import annotations

import posixpath

from flytelite.idl.error_kinds import SYSTEM
from flytelite.idl.ids import END_NODE, describe
from flytelite.propeller.nodes.failure_node import run_failure_node
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.phases import NodeStatusPhase
from flytelite.propeller.scope import DagScope

SUBWORKFLOW_FAILED = "SubWorkflowExecutionFailed"
# NodeStatus.workflow_phase once the subworkflow failed (Flyte's WorkflowNodePhaseFailing).
FAILING = "failing"
# Why the subworkflow's remaining nodes are aborted (FlytePropeller's HandleFailingSubWorkflow).
ABORT_REASON = "subworkflow failed"


class SubworkflowHandler(NodeHandler):
    kind = "subworkflow"

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        scope = self.child_scope(nctx)
        if scope is None:
            ref = nctx.node.workflow_node.sub_workflow_ref
            return PhaseInfo.failure(SUBWORKFLOW_FAILED, f"failed to find sub workflow with ID [{describe(ref)}] "
                                     f"in the compiled workflow of node {nctx.node_id}", kind=SYSTEM)
        st = nctx.status
        if st.workflow_phase != FAILING:
            outcome = nctx.nested.walk_dag(nctx.round, scope)
            if outcome.error is None:
                return copy_end_outputs(nctx, scope, "Subworkflow") if outcome.complete else PhaseInfo.running()
            # The subworkflow failed: stop what else it runs, once, and fail it as a workflow fails. As in
            # Flyte the node reports running meanwhile; its failure node starts in the next round, at once.
            nctx.nested.abort_dag(nctx.round, scope, ABORT_REASON)
            st.workflow_phase, st.workflow_error = FAILING, outcome.error
            nctx.round.requeue_now = True
            return PhaseInfo.running()
        return self.handle_failing(nctx, scope)

    def handle_failing(self, nctx: NodeExecutionContext, scope: DagScope) -> PhaseInfo:
        """Run the subworkflow's own failure node, if it has one; then the node fails
        (FlytePropeller's HandleFailingSubWorkflow and HandleFailureNodeOfSubWorkflow)."""
        original = nctx.status.workflow_error
        assert original is not None, "a failing subworkflow keeps the error it failed with"
        failure = scope.dag.failure_node
        if failure is None:
            return PhaseInfo(EPhase.FAILED, reason=original.message, error=original)
        done, error = run_failure_node(nctx.nested, nctx.round, scope, failure, original)
        if not done or error is None:  # done comes with the error to fail with
            return PhaseInfo.running()
        if scope.status(failure.id).phase == NodeStatusPhase.FAILED:
            # The failure node's error masks the subworkflow's. (A timed-out one does not, as in Flyte.)
            return PhaseInfo(EPhase.FAILED, reason=error.message, error=error)
        return PhaseInfo(EPhase.FAILED, reason=original.message, error=original)

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        scope = self.child_scope(nctx)
        if scope is None:
            return
        if nctx.status.workflow_phase == FAILING and scope.dag.failure_node is not None:
            # The subworkflow's own nodes were aborted when it failed; only its failure node may still run.
            nctx.nested.abort_dag(nctx.round, scope, reason, [scope.dag.failure_node.id])
        else:
            nctx.nested.abort_dag(nctx.round, scope, reason)

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        dag = nctx.dag_scope.subworkflow(nctx.node.workflow_node.sub_workflow_ref)
        if dag is None:
            return None
        return nctx.dag_scope.child(dag, nctx.status, nctx.node.id, inputs_uri=nctx.input_uri)


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
