"""One level of the node tree an execution walks (FlytePropeller's ExecutionContext + NodeLookup + DAGStructure).

The top level is the workflow itself. A subworkflow node, a dynamic node and a branch's chosen arm
each open a nested scope: its own nodes and edges, its node statuses (kept inside the parent node's
status, so they persist with it), its data dir (the parent's output dir, as in Flyte) and the
parent's lineage, from which nested node execution ids are derived as FlytePropeller derives them
(`<parent unique id>-<parent attempt>-<node id>`, hashed when longer than 20 characters).
A scope holds no I/O; it never runs anything itself.
"""

from __future__ import annotations

import base64
import posixpath
import weakref
from dataclasses import dataclass

from flyteidl.core import compiler_pb2, identifier_pb2, tasks_pb2, workflow_pb2

from flytelite.idl.error_kinds import ErrorInfo
from flytelite.idl.ids import END_NODE
from flytelite.propeller.phases import NODE_PASSED
from flytelite.propeller.status import NodeStatus
from flytelite.propeller.workflow import ExecutableWorkflow, node_kind

MAX_UNIQUE_ID_LENGTH = 20
# flytestdlib's base32 alphabet for hashed ids.
_B32 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz123456")


def fixed_length_unique_id(parts: list[str], max_length: int = MAX_UNIQUE_ID_LENGTH) -> str:
    """Parts joined with '-' (empty leading parts dropped), or 'f' + base32(fnv32a) when too long."""
    text = ""
    for i, part in enumerate(parts):
        if i > 0 and text:
            text += "-"
        text += part
    if len(text) <= max_length:
        return text
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "f" + base64.b32encode(h.to_bytes(4, "big")).decode().rstrip("=").translate(_B32)


@dataclass(frozen=True)
class ParentInfo:
    """The node a nested scope belongs to: its unique id, its current attempt, whether a dynamic node is above."""

    unique_id: str
    attempt: int
    in_dynamic_chain: bool = False


class LeafDag:
    """The one-node DAG of a branch's chosen arm (FlytePropeller's LeafNodeDAGStructure).

    The arm waits for the nodes it depends on, which live in enclosing scopes: a condition may read a
    workflow input while the arm it picks reads another node's output, and the branch node itself does
    not wait for that node.
    """

    fail_after_executable_nodes_complete = False
    closure = None
    failure_node: workflow_pb2.Node | None = None
    end_bindings: list = []

    def __init__(self, node: workflow_pb2.Node, upstream: list[str] | None = None):
        self.nodes = {node.id: node}
        self.kinds = {node.id: node_kind(node)}
        self.upstream: dict[str, list[str]] = {node.id: list(upstream or ())}
        self.downstream: dict[str, list[str]] = {node.id: []}
        self.order = [node.id]

    def task(self, node: workflow_pb2.Node) -> tasks_pb2.TaskTemplate | None:
        return None


class DagScope:
    def __init__(self, dag: ExecutableWorkflow | LeafDag, statuses: dict[str, NodeStatus], data_dir: str, *,
                 parent: ParentInfo | None = None, inputs_uri: str = "", outer: DagScope | None = None):
        self.dag = dag
        self.statuses = statuses
        self.data_dir = data_dir
        self.parent = parent
        # What the scope's start-node outputs: the workflow's (or subworkflow node's) inputs; '' = none.
        self.inputs_uri = inputs_uri
        # The enclosing scope, whose nodes a branch arm's bindings may name.
        self.outer = outer
        # Set only on the scope a workflow's failure node runs in: the error it handles, for its `err`
        # input (FlytePropeller's FailureNodeLookup.OriginalError).
        self.failure_error: ErrorInfo | None = None

    @property
    def nested(self) -> bool:
        return self.parent is not None

    def status(self, node_id: str) -> NodeStatus:
        st = self.statuses.get(node_id)
        if st is None:
            st = self.statuses[node_id] = NodeStatus()
        return st

    def unique_id(self, node_id: str) -> str:
        """The node execution id admin knows this node by."""
        if self.parent is None:
            return node_id
        return fixed_length_unique_id([self.parent.unique_id, str(self.parent.attempt), node_id])

    def node_data_dir(self, node_id: str) -> str:
        # Flyte: top-level nodes under `<wfdir>/<id>/data`, nested ones under `<parent output dir>/<id>`.
        if self.parent is None:
            return posixpath.join(self.data_dir, node_id, "data")
        return posixpath.join(self.data_dir, node_id)

    def complete(self) -> bool:
        if END_NODE in self.dag.nodes:
            return self.status(END_NODE).phase in NODE_PASSED
        return all(self.status(n).phase in NODE_PASSED for n in self.dag.order)

    def upstream_status(self, node_id: str) -> NodeStatus:
        """The status of an upstream node, which for a branch arm may live in an enclosing scope."""
        if node_id in self.dag.nodes:
            return self.status(node_id)
        owner = self.owner_of(node_id)
        return owner[0].status(node_id) if owner is not None else self.status(node_id)

    def task(self, node: workflow_pb2.Node) -> tasks_pb2.TaskTemplate | None:
        scope: DagScope | None = self
        while scope is not None:
            found = scope.dag.task(node)
            if found is not None:
                return found
            scope = scope.outer
        return None

    def owner_of(self, node_id: str) -> tuple[DagScope, workflow_pb2.Node] | None:
        """The scope that holds a node a binding names (this one, else an enclosing one)."""
        scope: DagScope | None = self
        while scope is not None:
            node = scope.dag.nodes.get(node_id)
            if node is not None:
                return scope, node
            scope = scope.outer
        return None

    def subworkflow(self, ident: identifier_pb2.Identifier) -> ExecutableWorkflow | None:
        """The compiled subworkflow `ident` from the closure this scope runs (or an enclosing one)."""
        scope: DagScope | None = self
        while scope is not None:
            dag = scope.dag
            if isinstance(dag, ExecutableWorkflow) and dag.closure is not None:
                found = subworkflow_dag(dag, ident)
                if found is not None:
                    return found
            scope = scope.outer
        return None

    def child(self, dag: ExecutableWorkflow | LeafDag, parent_status: NodeStatus, parent_id: str, *,
              dynamic: bool = False, inputs_uri: str = "", outer: DagScope | None = None) -> DagScope:
        """The scope a node of this scope opens; its children's statuses live in the node's own status."""
        in_chain = dynamic or (self.parent is not None and self.parent.in_dynamic_chain)
        parent = ParentInfo(self.unique_id(parent_id), parent_status.attempts, in_chain)
        return DagScope(dag, parent_status.sub_nodes, parent_status.output_dir, parent=parent,
                        inputs_uri=inputs_uri, outer=outer)


# Compiled subworkflows, indexed once per closure they come from.
_SUBWORKFLOWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def subworkflow_dag(workflow: ExecutableWorkflow, ident: identifier_pb2.Identifier) -> ExecutableWorkflow | None:
    key = (ident.project, ident.domain, ident.name, ident.version)
    index = _SUBWORKFLOWS.get(workflow)
    if index is None:
        index = _SUBWORKFLOWS[workflow] = {}
    if key not in index:
        found = None
        for sub in workflow.closure.sub_workflows:
            sid = sub.template.id
            if (sid.project, sid.domain, sid.name, sid.version) == key:
                # The subworkflow runs with the closure's tasks and subworkflows (which may nest further).
                found = ExecutableWorkflow(compiler_pb2.CompiledWorkflowClosure(
                    primary=sub, tasks=workflow.closure.tasks, sub_workflows=workflow.closure.sub_workflows))
                break
        index[key] = found
    return index[key]
