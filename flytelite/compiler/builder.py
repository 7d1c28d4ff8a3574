"""Compilation state: the workflow being built, its nodes and the things they reference.

A ``NodeBuilder`` wraps a live ``core.Node`` inside the workflow template being compiled (so renames
and promise fixes land in the output) and carries what the compiler learns about it: its effective
interface, the task or subworkflow it runs. A ``WorkflowBuilder`` holds one workflow's nodes and
graph; nested subworkflows get their own builder over the same shared ``Index``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flyteidl.core import compiler_pb2, identifier_pb2, interface_pb2, tasks_pb2, workflow_pb2

from flytelite.compiler.graph import Graph

IdKey = tuple[int, str, str, str, str, str]


def id_key(ident: identifier_pb2.Identifier) -> IdKey:
    return (ident.resource_type, ident.project, ident.domain, ident.name, ident.version, ident.org)


def id_sort_key(ident: identifier_pb2.Identifier) -> tuple:
    # Flyte orders identifiers by resource type, project, domain, name, version.
    return (ident.resource_type, ident.project, ident.domain, ident.name, ident.version, ident.org)


def id_str(ident: identifier_pb2.Identifier) -> str:
    kind = identifier_pb2.ResourceType.Name(ident.resource_type)
    org = f"{ident.org}:" if ident.org else ""
    return f"{kind} {org}{ident.project}/{ident.domain}/{ident.name}@{ident.version}"


@dataclass
class LaunchPlanInterface:
    """What a launch-plan node needs to know about the plan it launches."""

    id: identifier_pb2.Identifier
    expected_inputs: interface_pb2.ParameterMap | None
    expected_outputs: interface_pb2.VariableMap | None


@dataclass
class Index:
    """Everything handed to the compiler, shared by the primary workflow and its subworkflows."""

    tasks: dict[IdKey, tasks_pb2.TaskTemplate] = field(default_factory=dict)
    subworkflows: dict[IdKey, compiler_pb2.CompiledWorkflow] = field(default_factory=dict)
    launch_plans: dict[IdKey, LaunchPlanInterface] = field(default_factory=dict)
    compiled_subworkflows: dict[IdKey, compiler_pb2.CompiledWorkflow] = field(default_factory=dict)
    compiling: set[IdKey] = field(default_factory=set)  # subworkflows being compiled (recursion guard)


class NodeBuilder:
    def __init__(self, node: workflow_pb2.Node):
        self.node = node
        self.interface: interface_pb2.TypedInterface | None = None
        self.task: tasks_pb2.TaskTemplate | None = None
        self.subworkflow: compiler_pb2.CompiledWorkflow | None = None
        self.renamed = False
        self._children: dict[tuple, NodeBuilder] = {}

    @property
    def id(self) -> str:
        return self.node.id

    @id.setter
    def id(self, value: str) -> None:
        self.node.id = value

    @property
    def kind(self) -> str | None:
        return self.node.WhichOneof("target")

    @property
    def has_metadata(self) -> bool:
        return self.node.HasField("metadata")

    def child(self, key: tuple, node: workflow_pb2.Node) -> NodeBuilder:
        """The builder of a nested node (branch arm, array sub-node), created once and reused."""
        if key not in self._children:
            self._children[key] = NodeBuilder(node)
        return self._children[key]


class WorkflowBuilder:
    def __init__(self, compiled: compiler_pb2.CompiledWorkflow, index: Index):
        self.compiled = compiled
        self.index = index
        self.nodes: dict[str, NodeBuilder] = {}
        self.graph = Graph()
        # Only the tasks/launch plans this workflow itself references are visible to its nodes.
        self.tasks: dict[IdKey, tasks_pb2.TaskTemplate] = {}
        self.launch_plans: dict[IdKey, LaunchPlanInterface] = {}
        self._failure: NodeBuilder | None = None

    @property
    def template(self) -> workflow_pb2.WorkflowTemplate:
        return self.compiled.template

    def failure_node(self) -> NodeBuilder | None:
        if not self.template.HasField("failure_node"):
            return None
        if self._failure is None:
            self._failure = NodeBuilder(self.template.failure_node)
        return self._failure

    def get_node(self, node_id: str) -> NodeBuilder | None:
        return self.nodes.get(node_id)

    def get_task(self, ident: identifier_pb2.Identifier) -> tasks_pb2.TaskTemplate | None:
        return self.tasks.get(id_key(ident))

    def get_launch_plan(self, ident: identifier_pb2.Identifier) -> LaunchPlanInterface | None:
        return self.launch_plans.get(id_key(ident))

    def get_subworkflow(self, ident: identifier_pb2.Identifier) -> compiler_pb2.CompiledWorkflow | None:
        return self.index.subworkflows.get(id_key(ident))
