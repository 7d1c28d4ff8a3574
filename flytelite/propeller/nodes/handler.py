"""The one small interface every node kind implements (FlytePropeller's NodeHandler), and what it gets.

A handler's handle() looks at one node and says what phase it is in now (PhaseInfo); the node
executor turns that into status, events, retries and timeouts. abort() stops whatever the node
started (a process, a child execution); finalize() cleans up after a terminal attempt.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from flyteidl.core import execution_pb2, literals_pb2, tasks_pb2, workflow_pb2
from flyteidl.event import event_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import ErrorInfo
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.scope import DagScope
from flytelite.propeller.status import NodeStatus


class EPhase(Enum):
    """What a handler reports (FlytePropeller's handler.EPhase)."""

    NOT_READY = "not-ready"
    QUEUED = "queued"
    RUNNING = "running"
    SKIP = "skip"
    SUCCESS = "success"
    FAILED = "failed"
    RETRYABLE_FAILURE = "retryable-failure"
    TIMED_OUT = "timed-out"
    DYNAMIC_RUNNING = "dynamic-running"
    RECOVERED = "recovered"


@dataclass
class PhaseInfo:
    phase: EPhase
    reason: str = ""
    error: ErrorInfo | None = None
    output_uri: str = ""
    deck_uri: str = ""
    task_node_metadata: event_pb2.TaskNodeMetadata | None = None
    # Launch-plan nodes: the child execution, reported in every node event (FlyteRemote links to it).
    workflow_node_metadata: event_pb2.WorkflowNodeMetadata | None = None

    @classmethod
    def running(cls, reason: str = "") -> PhaseInfo:
        return cls(EPhase.RUNNING, reason)

    @classmethod
    def success(cls, output_uri: str = "", **kw) -> PhaseInfo:
        return cls(EPhase.SUCCESS, output_uri=output_uri, **kw)

    @classmethod
    def failure(cls, code: str, message: str, kind: int = execution_pb2.ExecutionError.USER,
                retryable: bool = False) -> PhaseInfo:
        phase = EPhase.RETRYABLE_FAILURE if retryable else EPhase.FAILED
        return cls(phase, reason=message, error=ErrorInfo(code=code, message=message, kind=kind))

    @property
    def terminal(self) -> bool:
        return self.phase in (EPhase.SUCCESS, EPhase.FAILED, EPhase.RETRYABLE_FAILURE, EPhase.TIMED_OUT,
                              EPhase.SKIP, EPhase.RECOVERED)


@dataclass
class DagOutcome:
    """Where one pass over a scope's nodes left them: complete, failed with `error`, or neither (still going)."""

    complete: bool = False
    error: ErrorInfo | None = None


class SubNodeExecutor(Protocol):
    """What handlers of nested kinds call back into: the NodeExecutor, which moves their children through
    the same steps as top-level nodes (FlytePropeller hands its nested handlers its interfaces.Node)."""

    def walk_dag(self, rnd: ExecutionRound, scope: DagScope) -> DagOutcome:
        """One pass over a nested scope's nodes (branch, subworkflow, dynamic)."""
        ...

    def abort_dag(self, rnd: ExecutionRound, scope: DagScope, reason: str, node_ids: list[str] | None = None) -> None:
        """Abort a nested scope's active nodes (or only `node_ids`)."""
        ...

    def handle_node(self, rnd: ExecutionRound, node_id: str, scope: DagScope | None = None) -> bool:
        """Move one node of a scope along (a subworkflow's failure node)."""
        ...

    def handle_subnode(self, nctx: NodeExecutionContext, handler: NodeHandler) -> None:
        """Move a node that is in no DAG along (an array item)."""
        ...


@dataclass
class NodeExecutionContext:
    round: ExecutionRound
    node: workflow_pb2.Node
    status: NodeStatus
    # The level of the node tree the node is in (None: the workflow's top level), and the NodeExecutor
    # walking it (handlers of nested kinds hand their children back to it).
    scope: DagScope | None = None
    executor: SubNodeExecutor | None = None

    @property
    def node_id(self) -> str:
        """The node execution id admin knows: the spec id at the top level, derived from the parents' when nested."""
        return self.scope.unique_id(self.node.id) if self.scope is not None else self.node.id

    @property
    def recorded_node_id(self) -> str:
        """The node execution admin records for this node: its own; an array item's is its array node's."""
        return self.node_id

    @property
    def nested(self) -> SubNodeExecutor:
        """The executor, for handlers of nested kinds (every context the NodeExecutor builds has one)."""
        if self.executor is None:
            raise RuntimeError(f"node {self.node_id} was handed no node executor to run its children with")
        return self.executor

    @property
    def dag_scope(self) -> DagScope:
        """The scope, for handlers of nested kinds: their children's scope nests in it."""
        if self.scope is None:
            raise RuntimeError(f"node {self.node_id} was handed no scope to nest its children's in")
        return self.scope

    @property
    def attempt(self) -> int:
        return self.status.attempts

    @property
    def input_uri(self) -> str:
        return posixpath.join(self.status.data_dir, "inputs.pb")

    @property
    def output_dir(self) -> str:
        return self.status.output_dir

    @property
    def outputs_uri(self) -> str:
        return posixpath.join(self.status.output_dir, "outputs.pb")

    @property
    def task(self) -> tasks_pb2.TaskTemplate | None:
        if self.scope is not None:
            return self.scope.task(self.node)
        return self.round.workflow.task(self.node)

    @property
    def blobs(self):
        return self.round.ctx.blobs

    def read_inputs(self) -> literals_pb2.LiteralMap:
        """The node's input values. An array item overrides this: its values are its own item's, while
        input_uri is the array node's file with whole lists (Flyte's SINGLE_INPUT_FILE data mode)."""
        return self.blobs.read_proto_if_exists(self.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()


class NodeHandler:
    """Base of node handlers; `kind` is the registry key (see flytelite.propeller.workflow.node_kind)."""

    kind: str = ""
    # True when finalize() has work to do after a terminal phase (FlytePropeller's FinalizeRequired).
    finalize_required: bool = False
    # True for kinds counted against an execution's max parallelism.
    counts_for_parallelism: bool = False

    def setup(self) -> None:
        """Called once when the engine starts."""

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        raise NotImplementedError

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        """Stop what the node started; must be safe to call more than once."""

    def finalize(self, nctx: NodeExecutionContext) -> None:
        """Release what a terminal attempt left behind; must be safe to call more than once."""

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        """The nested scope an active node of this kind runs (branch, subworkflow, dynamic); None for leaf kinds."""
        return None


class UnsupportedNodeHandler(NodeHandler):
    """Stands in for node kinds flytelite does not run yet: the node fails saying so."""

    def __init__(self, kind: str):
        self.kind = kind

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        return PhaseInfo.failure(
            E.NODE_KIND_NOT_SUPPORTED,
            f"node {nctx.node_id} is a {self.kind} node; flytelite does not run {self.kind} nodes yet",
            kind=execution_pb2.ExecutionError.SYSTEM,
        )
