"""The launch-plan node handler: runs a launch plan as a child execution (FlytePropeller's subworkflow/launchplan.go).

The child gets its own execution, created through the engine's launchplan.Executor as FlytePropeller
asks FlyteAdmin to create it: mode CHILD_WORKFLOW, parent_node_execution = this node, nesting one
deeper, the parent's labels, annotations, envs and settings (a LaunchContext). Its name is derived
from the parent execution, the node and the attempt exactly as FlytePropeller derives it, so a
restarted engine finds the child it already started instead of starting a second one. The node
waits for the child's terminal phase (the child's finish wakes the parent; GetStatus reads it), then
takes its outputs or its error. Aborting the node Kills the child (admin's TerminateExecution path).
"""

from __future__ import annotations

import base64

from flyteidl.admin import execution_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.event import event_pb2

from flytelite import errors
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.propeller.clients.launchplan import LaunchContext
from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.nodes.recovery import original_child_execution

WfPhase = core_exec.WorkflowExecution.Phase

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
        cause = f"cascading abort as parent execution id [{nctx.round.key[2]}] aborted, reason [{reason}]"
        nctx.round.clients.launch_plans.kill(child_execution_id(nctx), cause)

    # -- the child --------------------------------------------------------------------------
    def _check(self, nctx: NodeExecutionContext, child) -> PhaseInfo | None:
        """The node's phase from the child's (None when the child does not exist yet)."""
        closure = nctx.round.clients.launch_plans.get_status(child)
        if closure is None:
            return None
        phase = closure.phase
        if phase == WfPhase.SUCCEEDED:
            return self._succeeded(nctx, child, closure)
        if phase in (WfPhase.FAILED, WfPhase.TIMED_OUT):
            err = closure.error if closure.HasField("error") else core_exec.ExecutionError(
                code=E.LAUNCH_PLAN_EXECUTION_FAILED, message="Unknown Error", kind=SYSTEM)
            info = PhaseInfo.failure(err.code or "LaunchPlanExecutionFailed", err.message, kind=err.kind)
            return info
        if phase == WfPhase.ABORTED:
            return PhaseInfo.failure(E.REMOTE_CHILD_WORKFLOW_EXECUTION_FAILED,
                                     f"launchplan [{child.name}] aborted: launchplan execution aborted", kind=USER)
        return PhaseInfo.running(f"child execution {child.name} is {WfPhase.Name(phase)}")

    def _succeeded(self, nctx: NodeExecutionContext, child, closure: execution_pb2.ExecutionClosure) -> PhaseInfo:
        blobs = nctx.blobs
        if closure.HasField("output_data"):
            outputs = closure.output_data
        elif closure.outputs.uri:
            outputs = blobs.read_proto_if_exists(closure.outputs.uri, literals_pb2.LiteralMap)
            if outputs is None:
                return PhaseInfo.failure(E.RUNTIME_EXECUTION_ERROR, f"remote output for launchplan execution "
                                         f"{child.name} was not found, uri [{closure.outputs.uri}]", kind=SYSTEM)
        else:
            outputs = closure.outputs.values if closure.outputs.HasField("values") else literals_pb2.LiteralMap()
        blobs.write_proto(nctx.outputs_uri, outputs)
        return PhaseInfo.success(output_uri=nctx.outputs_uri)

    def _launch(self, nctx: NodeExecutionContext, child) -> PhaseInfo | None:
        """Create the child execution; a PhaseInfo only when that failed for good."""
        rnd = nctx.round
        lp_ref = nctx.node.workflow_node.launchplan_ref
        # The child names this node's execution as its parent: admin must have applied the node's events so far.
        rnd.events.flush()
        inputs = nctx.blobs.read_proto_if_exists(nctx.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
        try:
            # A recovery whose original ran this node without success recovers the original's child too,
            # so only the part of the child that failed runs again.
            launch_ctx = _launch_context(nctx, recovery_execution=original_child_execution(nctx))
            rnd.clients.launch_plans.launch(launch_ctx, child, lp_ref, inputs)
        except errors.AlreadyExists:
            pass  # launched before a restart, or concurrently: the child stands
        except (errors.InvalidArgument, errors.NotFound, errors.FailedPrecondition) as e:
            return PhaseInfo.failure(E.RUNTIME_EXECUTION_ERROR, f"failed to launch workflow "
                                     f"{lp_ref.project}/{lp_ref.domain}/{lp_ref.name}@{lp_ref.version}: {e}",
                                     kind=USER)
        return None


def _launch_context(nctx: NodeExecutionContext, recovery_execution=None) -> LaunchContext:
    """What the child inherits from this execution (FlytePropeller's StartLaunchPlan)."""
    rnd, spec = nctx.round, nctx.round.spec
    return LaunchContext(
        parent_node_execution=identifier_pb2.NodeExecutionIdentifier(node_id=nctx.recorded_node_id,
                                                                     execution_id=rnd.exec_id),
        principal=spec.principal, max_parallelism=spec.max_parallelism, raw_output_prefix=spec.raw_output_prefix,
        labels=dict(spec.labels), annotations=dict(spec.annotations), envs=dict(spec.envs),
        interruptible=spec.interruptible, overwrite_cache=spec.overwrite_cache,
        recovery_execution=recovery_execution,
    )
