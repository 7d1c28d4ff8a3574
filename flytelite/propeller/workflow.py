"""A read-only, indexed view of the compiled workflow an execution runs (the FlyteWorkflow spec).

Built once per execution from the CompiledWorkflowClosure and cached by the engine: nodes by id
(with start-node and end-node present even when the compiler leaves them out), the DAG edges from
the compiled connections, a topological order, and tasks by identifier.
"""

from __future__ import annotations

from flyteidl.core import compiler_pb2, identifier_pb2, literals_pb2, tasks_pb2, workflow_pb2

from flytelite.idl.ids import END_NODE, START_NODE

TaskKey = tuple[str, str, str, str]


def task_key(ident: identifier_pb2.Identifier) -> TaskKey:
    return (ident.project, ident.domain, ident.name, ident.version)


def node_kind(node: workflow_pb2.Node) -> str:
    """The handler registry key of a node: start, end, task, branch, subworkflow, launch_plan, gate, array."""
    if node.id == START_NODE:
        return "start"
    if node.id == END_NODE:
        return "end"
    target = node.WhichOneof("target")
    if target == "task_node":
        return "task"
    if target == "workflow_node":
        return "launch_plan" if node.workflow_node.WhichOneof("reference") == "launchplan_ref" else "subworkflow"
    if target == "branch_node":
        return "branch"
    if target == "gate_node":
        return "gate"
    if target == "array_node":
        return "array"
    return target or "unknown"


class ExecutableWorkflow:
    def __init__(self, closure: compiler_pb2.CompiledWorkflowClosure):
        self.closure = closure
        primary = closure.primary
        self.template = primary.template
        self.id = self.template.id
        self.nodes: dict[str, workflow_pb2.Node] = {n.id: n for n in self.template.nodes}
        self.nodes.setdefault(START_NODE, workflow_pb2.Node(id=START_NODE))
        end = self.nodes.setdefault(END_NODE, workflow_pb2.Node(id=END_NODE))
        # The workflow's outputs are the end node's inputs.
        self.end_bindings = list(end.inputs) if len(end.inputs) else list(self.template.outputs)
        self.downstream: dict[str, list[str]] = {n: [] for n in self.nodes}
        self.upstream: dict[str, list[str]] = {n: [] for n in self.nodes}
        conns = primary.connections
        for src, ids in conns.downstream.items():
            if src in self.nodes:
                self.downstream[src] = [i for i in ids.ids if i in self.nodes]
        for dst, ids in conns.upstream.items():
            if dst in self.nodes:
                self.upstream[dst] = [i for i in ids.ids if i in self.nodes]
        if not len(conns.upstream):
            self._derive_edges()
        self.order = self._topological_order()
        self.tasks: dict[TaskKey, tasks_pb2.TaskTemplate] = {
            task_key(t.template.id): t.template for t in closure.tasks
        }
        self.failure_node = self.template.failure_node if self.template.HasField("failure_node") else None
        if self.failure_node is not None:
            # Addressable like any node, but outside the DAG (not in `order`): it runs only after the workflow
            # failed, with start-node as its one upstream node (FlytePropeller's FailureNodeLookup).
            self.nodes[self.failure_node.id] = self.failure_node
            self.upstream[self.failure_node.id] = [START_NODE]
            self.downstream[self.failure_node.id] = []
        # Each node's kind (node_kind), looked up for many nodes every round.
        self.kinds = {node_id: node_kind(node) for node_id, node in self.nodes.items()}
        self.fail_after_executable_nodes_complete = (
            self.template.metadata.on_failure == workflow_pb2.WorkflowMetadata.FAIL_AFTER_EXECUTABLE_NODES_COMPLETE
        )

    @classmethod
    def from_bytes(cls, closure_pb: bytes) -> ExecutableWorkflow:
        closure = compiler_pb2.CompiledWorkflowClosure()
        closure.ParseFromString(closure_pb)
        return cls(closure)

    def task(self, node: workflow_pb2.Node) -> tasks_pb2.TaskTemplate | None:
        if node.WhichOneof("target") != "task_node":
            return None
        return self.tasks.get(task_key(node.task_node.reference_id))

    def _derive_edges(self) -> None:
        """Edges from bindings and upstream_node_ids, for closures compiled without connections."""
        for node_id, node in self.nodes.items():
            if node_id == START_NODE:
                continue
            deps = node_dependencies(node, self.end_bindings if node_id == END_NODE else None) & set(self.nodes)
            if not deps:
                deps = {START_NODE}
            self.upstream[node_id] = sorted(deps)
            for d in deps:
                self.downstream[d].append(node_id)
        # As Flyte's compiler: a node nothing depends on still comes before end-node.
        if END_NODE in self.nodes:
            leaves = [n for n in self.nodes if n not in (START_NODE, END_NODE) and not self.downstream.get(n)]
            for leaf in leaves:
                self.downstream[leaf].append(END_NODE)
            end_deps = set(self.upstream.get(END_NODE, ())) | set(leaves)
            if len(end_deps) > 1 and START_NODE in end_deps:
                # start-node stood in for "no dependency"; real ones replace it.
                end_deps.discard(START_NODE)
                self.downstream[START_NODE].remove(END_NODE)
            self.upstream[END_NODE] = sorted(end_deps)

    def _topological_order(self) -> list[str]:
        pending = {n: set(self.upstream.get(n, ())) for n in self.nodes}
        order: list[str] = []
        ready = sorted(n for n, deps in pending.items() if not deps)
        while ready:
            n = ready.pop(0)
            order.append(n)
            del pending[n]
            for m in self.downstream.get(n, ()):
                if m in pending:
                    pending[m].discard(n)
                    if not pending[m]:
                        ready.append(m)
        if pending:
            raise ValueError(f"workflow {self.id.name} has a cycle among nodes {sorted(pending)}")
        return order


def node_dependencies(node: workflow_pb2.Node, bindings: list[literals_pb2.Binding] | None = None) -> set[str]:
    """The nodes a node waits for, as Flyte's compiler connects them: its explicit upstream ids and the
    nodes its input bindings read ('' = the workflow's inputs, i.e. start-node)."""
    deps = set(node.upstream_node_ids)
    for b in node.inputs if bindings is None else bindings:
        deps |= _promise_nodes(b.binding)
    return {d or START_NODE for d in deps}


def _promise_nodes(data: literals_pb2.BindingData) -> set[str]:
    kind = data.WhichOneof("value")
    if kind == "promise":
        return {data.promise.node_id}
    if kind == "collection":
        return set().union(*(_promise_nodes(b) for b in data.collection.bindings)) if data.collection.bindings else set()
    if kind == "map":
        return set().union(*(_promise_nodes(b) for b in data.map.bindings.values())) if data.map.bindings else set()
    return set()
