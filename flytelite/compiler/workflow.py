"""Workflow compilation: from a WorkflowTemplate to a CompiledWorkflowClosure, as Flyte does it.

The compiled template gains a ``start-node`` (whose outputs are the workflow inputs) and an
``end-node`` (whose inputs are the workflow outputs). Every node is validated, edges come from
bindings and ``upstream_node_ids``, nodes with no dependency hang off the start node and nodes
nothing depends on feed the end node, then the graph must be acyclic and fully reachable.
"""

from __future__ import annotations

from flyteidl.admin import launch_plan_pb2
from flyteidl.core import compiler_pb2, interface_pb2, tasks_pb2, workflow_pb2

from flytelite.compiler import errors as E
from flytelite.compiler.bindings import EdgeDirection, validate_bindings
from flytelite.compiler.builder import (
    Index,
    LaunchPlanInterface,
    NodeBuilder,
    WorkflowBuilder,
    id_key,
    id_str,
)
from flytelite.compiler.graph import validate_reachable
from flytelite.compiler.interface import task_not_found_message, validate_interface
from flytelite.compiler.nodes import add_edges, validate_node
from flytelite.compiler.requirements import collect_requirements, index_subworkflows
from flytelite.idl.ids import END_NODE, START_NODE


def _own_requirements(w: WorkflowBuilder) -> None:
    # A workflow's nodes see only the tasks and launch plans the workflow itself references.
    reqs = collect_requirements(w.template, w.index.subworkflows, False, E.Errors())
    for ident in reqs.task_ids:
        if id_key(ident) in w.index.tasks:
            w.tasks[id_key(ident)] = w.index.tasks[id_key(ident)]
    for ident in reqs.launch_plan_ids:
        if id_key(ident) in w.index.launch_plans:
            w.launch_plans[id_key(ident)] = w.index.launch_plans[id_key(ident)]


def validate_workflow(index: Index, compiled: compiler_pb2.CompiledWorkflow, errs: E.Errors) -> WorkflowBuilder | None:
    """Compile ``compiled.template`` in place (nodes, connections); None when it has errors."""
    t = compiled.template
    if len(t.nodes) == 0:
        errs.add(E.NO_NODES_FOUND, id_str(t.id), f"Workflow [{id_str(t.id)}] has no nodes to run.")
        return None
    w = WorkflowBuilder(compiled, index)
    _own_requirements(w)

    t.interface.SetInParent()
    iface_errs = errs.scope()
    validate_interface(START_NODE, t.interface, iface_errs)
    if not iface_errs.ok:
        return None

    checkpoint = []
    for node in t.nodes:
        checkpoint.append(workflow_pb2.Node())
        checkpoint[-1].CopyFrom(node)
    del t.nodes[:]

    start = t.nodes.add(id=START_NODE)
    start_b = NodeBuilder(start)
    start_b.interface = interface_pb2.TypedInterface(outputs=t.interface.inputs)
    w.nodes[START_NODE] = start_b
    end = t.nodes.add(id=END_NODE)
    end.inputs.extend(t.outputs)
    end_b = NodeBuilder(end)
    end_b.interface = interface_pb2.TypedInterface(inputs=t.interface.outputs)
    w.nodes[END_NODE] = end_b

    # Top-level nodes (not branch arms) must all run before the workflow ends.
    top_level: set[str] = set()
    for node in checkpoint:
        top_level.add(node.id)
        if node.id in w.nodes:
            errs.add(E.DUPLICATE_ID, node.id, f"Two nodes have the id [{node.id}]; node ids must be unique.")
            continue
        live = t.nodes.add()
        live.CopyFrom(node)
        b = NodeBuilder(live)
        w.nodes[b.id] = b
        validate_node(w, b, False, errs.scope())

    # Sorted so edges (and any errors) come out the same way every time.
    node_ids = sorted(w.nodes)
    for node_id in node_ids:
        if node_id != START_NODE:
            add_edges(w, w.nodes[node_id], EdgeDirection.BIDIRECTIONAL, errs.scope())

    failure = w.failure_node()
    if failure is not None:
        validate_node(w, failure, False, errs.scope())
        add_edges(w, failure, EdgeDirection.UPSTREAM, errs.scope())

    for node_id in node_ids:
        if node_id in (START_NODE, END_NODE) or node_id not in top_level:
            continue
        # Nodes depending on nothing start with the workflow; nodes nothing depends on feed its end.
        if node_id not in w.graph.upstream:
            w.graph.add_execution_edge(START_NODE, node_id)
        if node_id not in w.graph.downstream:
            w.graph.add_execution_edge(node_id, END_NODE)

    out_errs = errs.scope()
    validate_interface(END_NODE, end_b.interface, out_errs)
    if out_errs.ok:
        validate_bindings(
            w, end_b, end.inputs, end_b.interface.inputs, True, EdgeDirection.BIDIRECTIONAL, errs.scope()
        )

    validate_reachable(w.graph, w.nodes, errs.scope())
    w.graph.to_connections(compiled.connections)
    # The workflow outputs are the end node's bindings (promise node ids now filled in).
    del t.outputs[:]
    t.outputs.extend(end.inputs)
    return w if errs.ok else None


def _launch_plan_interface(lp: launch_plan_pb2.LaunchPlan) -> LaunchPlanInterface:
    closure = lp.closure if lp.HasField("closure") else None
    inputs: interface_pb2.ParameterMap | None = None
    outputs: interface_pb2.VariableMap | None = None
    if closure is not None and closure.HasField("expected_inputs"):
        inputs = closure.expected_inputs
    elif lp.spec.HasField("default_inputs"):
        inputs = lp.spec.default_inputs
    if closure is not None and closure.HasField("expected_outputs"):
        outputs = closure.expected_outputs
    return LaunchPlanInterface(id=lp.id, expected_inputs=inputs, expected_outputs=outputs)


def compile_workflow(
    workflow: workflow_pb2.WorkflowTemplate,
    subworkflows: list[workflow_pb2.WorkflowTemplate],
    tasks: list[compiler_pb2.CompiledTask],
    launch_plans: list[launch_plan_pb2.LaunchPlan],
) -> compiler_pb2.CompiledWorkflowClosure:
    """Compile a workflow with everything it references; raises CompileError listing every issue.

    Inputs are not modified. The closure holds the compiled primary workflow, the compiled
    subworkflows it uses (in the order given) and the tasks given (deduplicated, in the order given,
    as Flyte does; admin passes exactly ``get_requirements(...).task_ids`` in that order).
    """
    errs = E.Errors()
    if workflow is None:
        errs.add(E.VALUE_REQUIRED, "root", "No workflow was given.")
        errs.raise_if_any()
    if tasks is None:
        errs.add(E.VALUE_REQUIRED, "root", "No task list was given.")
        errs.raise_if_any()

    index = Index()
    task_order = []
    for ct in tasks:
        if not ct.HasField("template") or not ct.template.HasField("id"):
            errs.add(E.VALUE_REQUIRED, "task", "A compiled task has no template id.")
            errs.raise_if_any()
        key = id_key(ct.template.id)
        if key in index.tasks:
            continue
        template = tasks_pb2.TaskTemplate()
        template.CopyFrom(ct.template)
        index.tasks[key] = template
        task_order.append(key)
    index.subworkflows = index_subworkflows(list(subworkflows or []), errs.scope())
    errs.raise_if_any()
    for lp in launch_plans or []:
        index.launch_plans[id_key(lp.id)] = _launch_plan_interface(lp)

    compiled = compiler_pb2.CompiledWorkflow()
    compiled.template.CopyFrom(workflow)

    # Everything referenced, including from subworkflows, must have been provided.
    reqs = collect_requirements(compiled.template, index.subworkflows, True, errs.scope())
    for ident in reqs.launch_plan_ids:
        if id_key(ident) not in index.launch_plans:
            errs.add(
                E.WORKFLOW_REFERENCE_NOT_FOUND,
                START_NODE,
                f"Launch plan [{id_str(ident)}] is not among the launch plans provided.",
            )
    for ident in reqs.task_ids:
        if id_key(ident) not in index.tasks:
            errs.add(E.TASK_REFERENCE_NOT_FOUND, START_NODE, task_not_found_message(ident))
    errs.raise_if_any()

    validate_workflow(index, compiled, errs.scope())
    errs.raise_if_any()

    closure = compiler_pb2.CompiledWorkflowClosure()
    closure.primary.CopyFrom(compiled)
    # Like Flyte, every task given is carried (deduplicated, in the caller's order): callers pass
    # exactly get_requirements(...).task_ids, and Flyte's golden closures include extra ones too.
    for key in task_order:
        closure.tasks.add().template.CopyFrom(index.tasks[key])
    for key, sub in index.subworkflows.items():
        if key in index.compiled_subworkflows:
            closure.sub_workflows.add().CopyFrom(sub)
    return closure
