"""Flyte's phase numbers and which of them are terminal (pure)."""

from __future__ import annotations

from flyteidl.core import execution_pb2 as ex

from flytelite.idl.enums import enum_name

WorkflowPhase = ex.WorkflowExecution.Phase
NodePhase = ex.NodeExecution.Phase
TaskPhase = ex.TaskExecution.Phase

WORKFLOW_TERMINAL = frozenset(
    {WorkflowPhase.SUCCEEDED, WorkflowPhase.FAILED, WorkflowPhase.ABORTED, WorkflowPhase.TIMED_OUT}
)
NODE_TERMINAL = frozenset(
    {NodePhase.SUCCEEDED, NodePhase.FAILED, NodePhase.SKIPPED, NodePhase.ABORTED,
     NodePhase.TIMED_OUT, NodePhase.RECOVERED}
)
TASK_TERMINAL = frozenset({TaskPhase.SUCCEEDED, TaskPhase.FAILED, TaskPhase.ABORTED})


def workflow_phase_name(phase: int) -> str:
    return enum_name(WorkflowPhase, phase)


def node_phase_name(phase: int) -> str:
    return enum_name(NodePhase, phase)


def task_phase_name(phase: int) -> str:
    return enum_name(TaskPhase, phase)
