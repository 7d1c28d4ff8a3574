"""The engine's seam for child executions (FlytePropeller's nodes/subworkflow/launchplan: Executor and Reader).

A launch-plan node asks an Executor to Launch its child, polls it with GetStatus and stops it with
Kill; a dynamic node asks a Reader for the launch plans its futures call. The engine owns these
interfaces; whoever creates executions (admin, in-process or over the wire) implements them.
Refusals cross as flytelite.errors: AlreadyExists (the child stands), NotFound / InvalidArgument /
FailedPrecondition (the launch cannot succeed: a user error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from flyteidl.admin import execution_pb2, launch_plan_pb2
from flyteidl.core import identifier_pb2, literals_pb2


@dataclass(frozen=True)
class LaunchContext:
    """What the parent hands down to its child (FlytePropeller's launchplan.LaunchContext).

    The child's nesting is not here: the launcher derives it from the parent execution, as
    FlyteAdmin's execution manager does.
    """

    parent_node_execution: identifier_pb2.NodeExecutionIdentifier
    principal: str = ""
    max_parallelism: int = 0
    raw_output_prefix: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    envs: dict[str, str] = field(default_factory=dict)
    interruptible: bool | None = None
    overwrite_cache: bool = False
    # A recovery: the original execution's child of this node, to recover rather than launch afresh.
    recovery_execution: identifier_pb2.WorkflowExecutionIdentifier | None = None


class Executor(Protocol):
    """Launches, watches and stops child executions (FlytePropeller's launchplan.Executor)."""

    def launch(self, launch_ctx: LaunchContext, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
               launch_plan: identifier_pb2.Identifier, inputs: literals_pb2.LiteralMap) -> None:
        """Create the child (mode CHILD_WORKFLOW); raises AlreadyExists when it exists already."""

    def get_status(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
                   ) -> execution_pb2.ExecutionClosure | None:
        """The child's closure (phase, outputs or error), or None when there is no such execution."""

    def kill(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier, reason: str) -> None:
        """Terminate the child; nothing happens if it is gone or finished already."""


class Reader(Protocol):
    """Reads registered launch plans (FlytePropeller's launchplan.Reader)."""

    def get_launch_plan(self, launch_plan: identifier_pb2.Identifier) -> launch_plan_pb2.LaunchPlan | None:
        """The launch plan, or None when it is not registered."""
