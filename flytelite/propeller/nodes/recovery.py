"""Recovering nodes from an earlier execution (FlytePropeller's attemptRecovery in nodes/executor.go).

RecoverExecution starts a new execution whose ExecutionSpec.recover_from names the original one.
Before a node starts, the node executor asks here whether the original ran that node to success
(SUCCEEDED or RECOVERED, as admin recorded it, asked through the engine's recovery.Client): if so its
inputs and outputs are copied into the new execution's data dir and the node is RECOVERED instead of
run. Any other node runs again. This module only asks admin and copies blobs; it never runs anything.
"""

from __future__ import annotations

import logging

from flyteidl.core import catalog_pb2, literals_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.event import event_pb2

from flytelite.idl.ids import END_NODE, START_NODE, execution_id
from flytelite.propeller.nodes.handler import EPhase, NodeExecutionContext, PhaseInfo

log = logging.getLogger(__name__)
_RECOVERABLE = (core_exec.NodeExecution.SUCCEEDED, core_exec.NodeExecution.RECOVERED)


def recover_node(nctx: NodeExecutionContext) -> PhaseInfo | None:
    """A RECOVERED PhaseInfo with the original's outputs copied in place, or None: run the node."""
    if nctx.node.id in (START_NODE, END_NODE):
        return None
    found = _original_node_execution(nctx)
    if found is None:
        return None
    original, closure, input_uri = found
    if closure.phase not in _RECOVERABLE:
        return None
    blobs = nctx.blobs
    if closure.HasField("output_data"):
        outputs = closure.output_data
    elif closure.output_uri:
        outputs = blobs.read_proto_if_exists(closure.output_uri, literals_pb2.LiteralMap)
        if outputs is None:
            log.warning("node %s of %s succeeded but its outputs %s are gone; running it again",
                        nctx.node_id, original, closure.output_uri)
            return None
    else:
        outputs = literals_pb2.LiteralMap()
    inputs = blobs.read_proto_if_exists(input_uri, literals_pb2.LiteralMap) if input_uri else None
    if inputs is not None:
        blobs.write_proto(nctx.input_uri, inputs)
    blobs.write_proto(nctx.outputs_uri, outputs)
    info = PhaseInfo(EPhase.RECOVERED, reason=f"recovered from execution {original}", output_uri=nctx.outputs_uri,
                     deck_uri=closure.deck_uri if closure.deck_uri and blobs.exists(closure.deck_uri) else "")
    if closure.HasField("task_node_metadata"):
        meta = closure.task_node_metadata
        info.task_node_metadata = event_pb2.TaskNodeMetadata(cache_status=meta.cache_status or catalog_pb2.CACHE_DISABLED)
        if meta.HasField("catalog_key"):
            info.task_node_metadata.catalog_key.CopyFrom(meta.catalog_key)
    elif closure.HasField("workflow_node_metadata"):
        info.workflow_node_metadata = event_pb2.WorkflowNodeMetadata(
            execution_id=closure.workflow_node_metadata.executionId)
    return info


def original_child_execution(nctx: NodeExecutionContext):
    """The child execution the original execution's run of this launch-plan node started, if any."""
    found = _original_node_execution(nctx)
    if found is None:
        return None
    closure = found[1]
    if not closure.HasField("workflow_node_metadata") or not closure.workflow_node_metadata.executionId.name:
        return None
    return closure.workflow_node_metadata.executionId


def _original_node_execution(nctx: NodeExecutionContext):
    """(original execution name, closure, input uri) of this node in the execution being recovered, or None."""
    rnd = nctx.round
    original = rnd.spec.recover_from
    if not original:
        return None
    found = rnd.clients.recovery.recover_node_execution(execution_id(rnd.key[0], rnd.key[1], original), nctx.node_id)
    if found is None:
        return None
    return original, found.closure, found.input_uri
