"""FlytePropeller's own phase numbers for workflow and node status, and how they map to event phases.

The engine's persisted status uses these (Flyte's v1alpha1 numbers); events sent to admin use the
flyteidl enums (`flyteidl.core.execution_pb2`, named WorkflowPhase/NodePhase in `idl.phases`), whose
numbers differ: hence the names WorkflowStatusPhase and NodeStatusPhase here.
"""

from __future__ import annotations

from enum import IntEnum

from flyteidl.core import execution_pb2 as ex


class WorkflowStatusPhase(IntEnum):
    READY = 0
    RUNNING = 1
    SUCCEEDING = 2
    SUCCESS = 3
    FAILING = 4
    FAILED = 5
    ABORTED = 6
    HANDLING_FAILURE_NODE = 7


WORKFLOW_DONE = frozenset({
    WorkflowStatusPhase.SUCCESS, WorkflowStatusPhase.FAILED, WorkflowStatusPhase.ABORTED,
})


class NodeStatusPhase(IntEnum):
    NOT_YET_STARTED = 0
    QUEUED = 1
    RUNNING = 2
    FAILING = 3
    SUCCEEDING = 4
    SUCCEEDED = 5
    FAILED = 6
    SKIPPED = 7
    RETRYABLE_FAILURE = 8
    TIMING_OUT = 9
    TIMED_OUT = 10
    DYNAMIC_RUNNING = 11
    RECOVERED = 12


# Nodes in these phases are passed through: their downstream nodes may run.
NODE_PASSED = frozenset({NodeStatusPhase.SUCCEEDED, NodeStatusPhase.SKIPPED, NodeStatusPhase.RECOVERED})
NODE_FAILED = frozenset({NodeStatusPhase.FAILED, NodeStatusPhase.TIMED_OUT})
NODE_DONE = NODE_PASSED | NODE_FAILED
# Nodes in these phases hold resources (a process, a child execution) and are aborted on terminate.
NODE_ACTIVE = frozenset({
    NodeStatusPhase.QUEUED, NodeStatusPhase.RUNNING, NodeStatusPhase.FAILING, NodeStatusPhase.SUCCEEDING,
    NodeStatusPhase.RETRYABLE_FAILURE, NodeStatusPhase.TIMING_OUT, NodeStatusPhase.DYNAMIC_RUNNING,
})

_NODE_EVENT_PHASE = {
    NodeStatusPhase.QUEUED: ex.NodeExecution.QUEUED,
    NodeStatusPhase.RUNNING: ex.NodeExecution.RUNNING,
    # A retryable failure is still running from admin's point of view (as in FlytePropeller).
    NodeStatusPhase.RETRYABLE_FAILURE: ex.NodeExecution.RUNNING,
    NodeStatusPhase.DYNAMIC_RUNNING: ex.NodeExecution.DYNAMIC_RUNNING,
    NodeStatusPhase.SKIPPED: ex.NodeExecution.SKIPPED,
    NodeStatusPhase.SUCCEEDED: ex.NodeExecution.SUCCEEDED,
    NodeStatusPhase.FAILED: ex.NodeExecution.FAILED,
    NodeStatusPhase.TIMED_OUT: ex.NodeExecution.TIMED_OUT,
    NodeStatusPhase.RECOVERED: ex.NodeExecution.RECOVERED,
}


def node_event_phase(phase: NodeStatusPhase) -> int | None:
    """The flyteidl NodeExecution.Phase to report for a node phase (None: nothing to report)."""
    return _NODE_EVENT_PHASE.get(phase)
