"""The workflow failure node (`@workflow(on_failure=...)`): what runs after a workflow failed.

As FlytePropeller's handleFailureNode: once a failing workflow's running nodes are aborted, the
workflow enters HandlingFailureNode and its failure node runs like any node whose only upstream node
is start-node (so it gets the workflow's inputs). A failure task that declares flytekit's `err`
input gets the workflow's error in it. When the failure node succeeds the workflow fails with its
original error; when the failure node itself fails (or times out) the workflow fails with that error.
A failing subworkflow runs its own failure node the same way, inside the subworkflow node's scope
(nodes/subworkflow/, as FlytePropeller's HandleFailureNodeOfSubWorkflow).
This module never touches the DAG's own nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flyteidl.core import execution_pb2, literals_pb2, types_pb2, workflow_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import ErrorInfo
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.phases import NODE_FAILED, NODE_PASSED, NodeStatusPhase
from flytelite.propeller.scope import DagScope

if TYPE_CHECKING:
    from flytelite.propeller.nodes.executor import NodeExecutor
    from flytelite.propeller.nodes.handler import SubNodeExecutor

# The input name flytekit gives a failure task's error (flytekit.types.error.FlyteError).
ERROR_INPUT = "err"
# The union variant tag flytekit's FlyteError transformer answers to.
ERROR_TAG = "FlyteError"


def set_error_input(inputs: literals_pb2.LiteralMap, node_id: str, error: ErrorInfo | None) -> None:
    """Put the workflow's error in the failure node's `err` input, if it has one (FlytePropeller's
    ResolveOnFailureNodeInput: a union literal holding a core Error, failed_node_id = the failure node)."""
    if ERROR_INPUT not in inputs.literals:
        return
    message = error.message if error is not None else "unknown error"
    value = literals_pb2.Literal(scalar=literals_pb2.Scalar(error=types_pb2.Error(
        message=message, failed_node_id=node_id)))
    union = literals_pb2.Union(value=value, type=types_pb2.LiteralType(
        simple=types_pb2.ERROR, structure=types_pb2.TypeStructure(tag=ERROR_TAG)))
    inputs.literals[ERROR_INPUT].CopyFrom(literals_pb2.Literal(scalar=literals_pb2.Scalar(union=union)))


def handle_failure_node(nodes: NodeExecutor, rnd: ExecutionRound) -> tuple[bool, ErrorInfo | None]:
    """Move the workflow's failure node along; (done, error to fail the workflow with) once it is done.

    `nodes` is the NodeExecutor: the failure node is handled by its kind's handler like any node.
    """
    error = rnd.status.error or ErrorInfo(E.UNKNOWN_ERROR, f"Unknown error, last seen message [{rnd.status.message}]",
                                          execution_pb2.ExecutionError.UNKNOWN)
    node = rnd.workflow.failure_node
    assert node is not None, "only a workflow with a failure node handles one"
    return run_failure_node(nodes, rnd, nodes.top_scope(rnd), node, error)


def run_failure_node(nodes: SubNodeExecutor, rnd: ExecutionRound, scope: DagScope, node: workflow_pb2.Node,
                     error: ErrorInfo) -> tuple[bool, ErrorInfo | None]:
    """Move the failure node of the workflow `scope` runs along; (done, error the workflow fails with).

    The node runs in `scope` (its status among the scope's, its id derived from the scope's parent),
    with `error`, the error the workflow failed with, for its `err` input.
    """
    st = scope.status(node.id)
    if st.phase not in NODE_PASSED and st.phase not in NODE_FAILED:
        scope.failure_error = error
        nodes.handle_node(rnd, node.id, scope)
    if st.phase == NodeStatusPhase.TIMED_OUT:
        return True, ErrorInfo(E.TIMED_OUT, "FailureNode Timed-out", execution_pb2.ExecutionError.USER)
    if st.phase in NODE_FAILED:
        return True, st.error or ErrorInfo(E.FAILURE_NODE_FAILED, f"failure node {scope.unique_id(node.id)} failed",
                                           execution_pb2.ExecutionError.USER)
    if st.phase in NODE_PASSED:
        return True, error
    return False, None
