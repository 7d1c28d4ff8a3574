"""What a workflow needs before it can be compiled: the tasks and launch plans its nodes reference.

Walks task nodes, launch-plan and subworkflow nodes, branch arms, array sub-nodes and the failure
node. The admin uses ``get_requirements`` to know what to load; the compiler uses it to check that
everything referenced was provided. Ids come back sorted the way Flyte sorts identifiers.
"""

from __future__ import annotations

from dataclasses import dataclass

from flyteidl.core import compiler_pb2, identifier_pb2, workflow_pb2

from flytelite.compiler import errors as E
from flytelite.compiler.builder import IdKey, id_key, id_sort_key, id_str


@dataclass
class Requirements:
    task_ids: list[identifier_pb2.Identifier]
    launch_plan_ids: list[identifier_pb2.Identifier]
    subworkflow_ids: list[identifier_pb2.Identifier]


class _Collector:
    def __init__(self, subworkflows: dict[IdKey, compiler_pb2.CompiledWorkflow], follow: bool, errs: E.Errors):
        self.subworkflows = subworkflows
        self.follow = follow
        self.errs = errs
        self.tasks: dict[IdKey, identifier_pb2.Identifier] = {}
        self.launch_plans: dict[IdKey, identifier_pb2.Identifier] = {}
        self.subs: dict[IdKey, identifier_pb2.Identifier] = {}

    def workflow(self, template: workflow_pb2.WorkflowTemplate) -> None:
        for node in template.nodes:
            self.node(node)
        if template.HasField("failure_node"):
            self.node(template.failure_node)

    def node(self, node: workflow_pb2.Node) -> None:
        kind = node.WhichOneof("target")
        if kind == "task_node":
            if node.task_node.HasField("reference_id"):
                self.tasks[id_key(node.task_node.reference_id)] = node.task_node.reference_id
        elif kind == "workflow_node":
            wn = node.workflow_node
            if wn.HasField("launchplan_ref"):
                self.launch_plans[id_key(wn.launchplan_ref)] = wn.launchplan_ref
            elif wn.HasField("sub_workflow_ref") and self.follow:
                key = id_key(wn.sub_workflow_ref)
                sub = self.subworkflows.get(key)
                if sub is None:
                    self.errs.add(
                        E.WORKFLOW_REFERENCE_NOT_FOUND,
                        node.id,
                        f"Subworkflow [{id_str(wn.sub_workflow_ref)}] is not among the workflows provided.",
                    )
                elif key not in self.subs:  # visit each subworkflow once (also guards recursion)
                    self.subs[key] = wn.sub_workflow_ref
                    self.workflow(sub.template)
        elif kind == "branch_node":
            if_else = node.branch_node.if_else
            self.node(if_else.case.then_node)
            for other in if_else.other:
                self.node(other.then_node)
            if if_else.HasField("else_node"):
                self.node(if_else.else_node)
        elif kind == "array_node":
            self.node(node.array_node.node)


def collect_requirements(
    template: workflow_pb2.WorkflowTemplate,
    subworkflows: dict[IdKey, compiler_pb2.CompiledWorkflow],
    follow_subworkflows: bool,
    errs: E.Errors,
) -> Requirements:
    c = _Collector(subworkflows, follow_subworkflows, errs)
    c.workflow(template)
    return Requirements(
        task_ids=sorted(c.tasks.values(), key=id_sort_key),
        launch_plan_ids=sorted(c.launch_plans.values(), key=id_sort_key),
        subworkflow_ids=sorted(c.subs.values(), key=id_sort_key),
    )


def get_requirements(
    workflow: workflow_pb2.WorkflowTemplate, subworkflows: list[workflow_pb2.WorkflowTemplate] | None = None
) -> Requirements:
    """Tasks, launch plans and subworkflows a workflow (and its subworkflows) reference.

    Raises CompileError when a referenced subworkflow is missing or two subworkflows share an id.
    """
    errs = E.Errors()
    index = index_subworkflows(subworkflows or [], errs)
    reqs = collect_requirements(workflow, index, True, errs)
    errs.raise_if_any()
    return reqs


def index_subworkflows(
    subworkflows: list[workflow_pb2.WorkflowTemplate], errs: E.Errors
) -> dict[IdKey, compiler_pb2.CompiledWorkflow]:
    index: dict[IdKey, compiler_pb2.CompiledWorkflow] = {}
    for wf in subworkflows:
        if not wf.HasField("id"):
            errs.add(E.VALUE_REQUIRED, "root", "A subworkflow has no id; every subworkflow needs one.")
            continue
        key = id_key(wf.id)
        if key in index:
            errs.add(E.DUPLICATE_ID, id_str(wf.id), "Two subworkflows were given with this same id.")
            continue
        compiled = compiler_pb2.CompiledWorkflow()
        compiled.template.CopyFrom(wf)
        index[key] = compiled
    return index
