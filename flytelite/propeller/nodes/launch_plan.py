"""The launch-plan node handler: runs a launch plan as a child execution (FlytePropeller's subworkflow/launchplan.go).

The child gets its own execution, created through admin's `launch_execution` as FlytePropeller
asks FlyteAdmin to create it: mode CHILD_WORKFLOW, parent_node_execution = this node, nesting one
deeper, the parent's labels, annotations, envs and settings. Its name is derived from the parent
execution, the node and the attempt exactly as FlytePropeller derives it, so a restarted engine
finds the child it already started instead of starting a second one. The node waits for the
child's terminal phase (the child's finish wakes the parent), then takes its outputs or its error.
Aborting the node terminates the child through admin's TerminateExecution path.
"""

from __future__ import annotations

import base64
import logging

from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.event import event_pb2
from google.protobuf import wrappers_pb2

from flytelite import errors
from flytelite.admin.executions import recover_execution, terminate_execution
from flytelite.admin.launch import launch_execution
from flytelite.idl.phases import WORKFLOW_TERMINAL
from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.recovery import original_child_execution
from flytelite.store import executions as repo

log = logging.getLogger(__name__)
WfPhase = core_exec.WorkflowExecution.Phase
SYSTEM, USER = core_exec.ExecutionError.SYSTEM, core_exec.ExecutionError.USER

# FlytePropeller's child execution names: at most 20 characters, else a hash (encoding.FixedLengthUniqueID).
MAX_CHILD_NAME_LENGTH = 20
_FNV64_OFFSET, _FNV64_PRIME = 0xCBF29CE484222325, 0x100000001B3
_B32_STANDARD = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_FLYTE = b"abcdefghijklmnopqrstuvwxyz123456"


def child_execution_name(parent_name: str, node_id: str, attempt: int) -> str:
    """The child's name, as FlytePropeller's GetChildWorkflowExecutionIDV2 computes it."""
    joined = "-".join(p for p in (parent_name, node_id, str(attempt)) if p)
    if len(joined) <= MAX_CHILD_NAME_LENGTH:
        return joined
    digest = _FNV64_OFFSET
    for byte in joined.encode():
        digest = ((digest ^ byte) * _FNV64_PRIME) & 0xFFFFFFFFFFFFFFFF
    encoded = base64.b32encode(digest.to_bytes(8, "big")).translate(bytes.maketrans(_B32_STANDARD, _B32_FLYTE))
    return "f" + encoded.decode().rstrip("=")


def child_execution_id(nctx: NodeExecutionContext) -> identifier_pb2.WorkflowExecutionIdentifier:
    project, domain, name = nctx.round.key
    return identifier_pb2.WorkflowExecutionIdentifier(
        project=project, domain=domain, name=child_execution_name(name, nctx.node_id, nctx.attempt))


class LaunchPlanHandler(NodeHandler):
    kind = "launch_plan"
    counts_for_parallelism = True

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        child = child_execution_id(nctx)
        linked = event_pb2.WorkflowNodeMetadata(execution_id=child)
        info = self._check(nctx, child)
        if info is None:
            info = self._launch(nctx, child) or PhaseInfo.running(f"launched child execution {child.name}")
        info.workflow_node_metadata = linked
        return info

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        child = child_execution_id(nctx)
        with nctx.round.ctx.db.session() as session:
            row = repo.find_execution(session, child)
            if row is None or row.phase in WORKFLOW_TERMINAL:
                return
        cause = f"cascading abort as parent execution id [{nctx.round.key[2]}] aborted, reason [{reason}]"
        try:
            terminate_execution(nctx.round.ctx, child, cause)
        except (errors.FailedPrecondition, errors.NotFound):
            pass  # finished (or gone) meanwhile: nothing left to stop

    # -- the child --------------------------------------------------------------------------
    def _check(self, nctx: NodeExecutionContext, child) -> PhaseInfo | None:
        """The node's phase from the child's (None when the child does not exist yet)."""
        with nctx.round.ctx.db.session() as session:
            row = repo.find_execution(session, child)
            if row is None:
                return None
            phase, closure = row.phase, execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        if phase == WfPhase.SUCCEEDED:
            return self._succeeded(nctx, child, closure)
        if phase in (WfPhase.FAILED, WfPhase.TIMED_OUT):
            err = closure.error if closure.HasField("error") else core_exec.ExecutionError(
                code="LaunchPlanExecutionFailed", message="Unknown Error", kind=SYSTEM)
            info = PhaseInfo.failure(err.code or "LaunchPlanExecutionFailed", err.message, kind=err.kind)
            return info
        if phase == WfPhase.ABORTED:
            return PhaseInfo.failure("RemoteChildWorkflowExecutionFailed",
                                     f"launchplan [{child.name}] aborted: launchplan execution aborted", kind=USER)
        return PhaseInfo.running(f"child execution {child.name} is {WfPhase.Name(phase)}")

    def _succeeded(self, nctx: NodeExecutionContext, child, closure: execution_pb2.ExecutionClosure) -> PhaseInfo:
        blobs = nctx.blobs
        if closure.HasField("output_data"):
            outputs = closure.output_data
        elif closure.outputs.uri:
            outputs = blobs.read_proto_if_exists(closure.outputs.uri, literals_pb2.LiteralMap)
            if outputs is None:
                return PhaseInfo.failure("RuntimeExecutionError", f"remote output for launchplan execution "
                                         f"{child.name} was not found, uri [{closure.outputs.uri}]", kind=SYSTEM)
        else:
            outputs = closure.outputs.values if closure.outputs.HasField("values") else literals_pb2.LiteralMap()
        blobs.write_proto(nctx.outputs_uri, outputs)
        return PhaseInfo.success(output_uri=nctx.outputs_uri)

    def _launch(self, nctx: NodeExecutionContext, child) -> PhaseInfo | None:
        """Create the child execution; a PhaseInfo only when that failed for good."""
        rnd = nctx.round
        parent_node = identifier_pb2.NodeExecutionIdentifier(node_id=nctx.node_id, execution_id=rnd.exec_id)
        lp_ref = nctx.node.workflow_node.launchplan_ref
        # The child names this node's execution as its parent: admin must have applied the node's events so far.
        rnd.events.flush()
        try:
            original = original_child_execution(nctx)
            if original is not None:
                # A recovery whose original ran this node without success: recover its child too, so only
                # the part of the child that failed runs again.
                try:
                    recover_execution(rnd.ctx, original, child.name, parent_node)
                    return None
                except errors.NotFound:
                    log.warning("cannot recover child execution %s of node %s; launching it afresh",
                                original.name, nctx.node_id)
            launch_execution(rnd.ctx, self._request(nctx, child, parent_node, lp_ref))
        except errors.AlreadyExists:
            pass  # launched before a restart, or concurrently: the child stands
        except (errors.InvalidArgument, errors.NotFound, errors.FailedPrecondition) as e:
            return PhaseInfo.failure("RuntimeExecutionError", f"failed to launch workflow "
                                     f"{lp_ref.project}/{lp_ref.domain}/{lp_ref.name}@{lp_ref.version}: {e}",
                                     kind=USER)
        return None

    @staticmethod
    def _request(nctx: NodeExecutionContext, child, parent_node, lp_ref) -> execution_pb2.ExecutionCreateRequest:
        rnd, spec = nctx.round, nctx.round.spec
        inputs = nctx.blobs.read_proto_if_exists(nctx.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
        with rnd.ctx.db.session() as session:
            parent = repo.find_execution(session, rnd.exec_id)
            nesting = execution_pb2.ExecutionSpec.FromString(parent.spec_pb).metadata.nesting if parent else 0
        child_spec = execution_pb2.ExecutionSpec(
            launch_plan=lp_ref,
            metadata=execution_pb2.ExecutionMetadata(
                mode=execution_pb2.ExecutionMetadata.CHILD_WORKFLOW, nesting=nesting + 1,
                principal=spec.principal, parent_node_execution=parent_node),
            labels=common_pb2.Labels(values=spec.labels),
            annotations=common_pb2.Annotations(values=spec.annotations),
            max_parallelism=spec.max_parallelism,
            raw_output_data_config=common_pb2.RawOutputDataConfig(output_location_prefix=spec.raw_output_prefix),
            overwrite_cache=spec.overwrite_cache,
            envs=common_pb2.Envs(values=[literals_pb2.KeyValuePair(key=k, value=v) for k, v in spec.envs.items()]),
        )
        if spec.interruptible is not None:
            child_spec.interruptible.CopyFrom(wrappers_pb2.BoolValue(value=spec.interruptible))
        return execution_pb2.ExecutionCreateRequest(project=child.project, domain=child.domain, name=child.name,
                                                    spec=child_spec, inputs=inputs)
