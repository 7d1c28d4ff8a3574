"""The branch node handler: if / elif / else over the node's inputs (FlytePropeller's nodes/branch).

On its first look the branch evaluates its conditions on its resolved inputs (conditions.py),
marks the arms not taken SKIPPED, and remembers the arm it took. The taken arm's node then runs as
the branch's one child, in a leaf scope whose bindings see the scope around the branch; its node
execution id is `<branch id>-<attempt>-<arm id>`, its data under the branch's output dir. The
branch succeeds with the arm's outputs, or fails with the arm's error, or with the `.fail()`
message when no arm holds. As in Flyte, branch events do not set is_parent (FlyteRemote lists a
branch's children by its node kind) and skipped arms are recorded in status, never reported.
"""

from __future__ import annotations

import posixpath

from flyteidl.core import literals_pb2, workflow_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.propeller.nodes.branch.conditions import decide_branch
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.phases import NodeStatusPhase
from flytelite.propeller.scope import DagScope, LeafDag
from flytelite.propeller.status import NodeStatus
from flytelite.propeller.workflow import node_dependencies

SKIPPED_REASON = "Branch evaluated to false"


class BranchHandler(NodeHandler):
    kind = "branch"
    # Failing must abort the arm that runs (finalize_required routes FAILED through FAILING).
    finalize_required = True

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        st = nctx.status
        if st.branch_taken is None:
            inputs = nctx.blobs.read_proto_if_exists(nctx.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
            decision = decide_branch(nctx.node.branch_node, inputs)
            for arm_id in decision.skipped:
                arm = st.sub_nodes.setdefault(arm_id, NodeStatus())
                arm.phase, arm.message = NodeStatusPhase.SKIPPED, SKIPPED_REASON
            if decision.error is not None:
                err = decision.error
                return PhaseInfo.failure(err.code, str(err), kind=err.kind)
            st.branch_taken = decision.taken
        scope = self.child_scope(nctx)
        if scope is None or not st.branch_taken:  # (an arm's scope is had only once one was taken)
            return PhaseInfo.failure(E.DOWNSTREAM_NODE_NOT_FOUND,
                                     f"branch node {nctx.node_id} has no arm named {st.branch_taken}", kind=SYSTEM)
        outcome = nctx.nested.walk_dag(nctx.round, scope)
        if outcome.error is not None:
            return PhaseInfo(EPhase.FAILED, reason=outcome.error.message, error=outcome.error)
        if not outcome.complete:
            return PhaseInfo.running()
        # The branch's outputs are the taken arm's outputs.
        arm_outputs = posixpath.join(scope.status(st.branch_taken).output_dir, "outputs.pb")
        if not nctx.blobs.exists(arm_outputs):
            return PhaseInfo.success()
        nctx.blobs.write_bytes(nctx.outputs_uri, nctx.blobs.read_bytes(arm_outputs))
        return PhaseInfo.success(output_uri=nctx.outputs_uri)

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        scope = self.child_scope(nctx)
        if scope is not None:
            nctx.nested.abort_dag(nctx.round, scope, reason)

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        taken = nctx.status.branch_taken
        node = arm_node(nctx.node.branch_node, taken) if taken else None
        if node is None:
            return None
        # As FlytePropeller's recurseDownstream: the arm's DAG holds the nodes the arm depends on, found in
        # the scopes around the branch (the branch node itself, running now, is not waited for).
        outer = nctx.dag_scope
        upstream = sorted(d for d in node_dependencies(node) if d != nctx.node.id and outer.owner_of(d) is not None)
        return outer.child(LeafDag(node, upstream), nctx.status, nctx.node.id, outer=outer)


def arm_node(branch: workflow_pb2.BranchNode, arm_id: str) -> workflow_pb2.Node | None:
    if_else = branch.if_else
    arms = [block.then_node for block in (if_else.case, *if_else.other)]
    if if_else.HasField("else_node"):
        arms.append(if_else.else_node)
    return next((arm for arm in arms if arm.id == arm_id), None)
