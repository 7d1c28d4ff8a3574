"""GetExecutionMetrics: an execution's time as nested spans, built as FlyteAdmin's metrics manager builds them
from the execution, its node executions and their task executions.

The execution's span holds WORKFLOW_SETUP (created until the start node ended), a span per node and
WORKFLOW_TEARDOWN (the end node's last upstream node ended until the execution's last update). A node's span
starts with NODE_TRANSITION (its last upstream node ended until it was created), then, by kind: a task node
NODE_SETUP, a span per attempt (TASK_SETUP, TASK_RUNTIME, TASK_TEARDOWN) with NODE_RESET between attempts and
NODE_TEARDOWN; a gate node NODE_SETUP, NODE_IDLE, NODE_TEARDOWN; a dynamic task, subworkflow or branch node
the spans of the nodes it ran; a launch plan node the span of the execution it launched. `depth` bounds how
many levels below the execution have spans of their own (FlyteAdmin's: 0 gives the execution's span alone;
each level of nodes or attempts takes one, each operation none).
"""

from __future__ import annotations

from flyteidl.admin import common_pb2, execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import compiler_pb2, metrics_pb2, workflow_pb2
from google.protobuf import timestamp_pb2

from flytelite.context import Context

START, END = "start-node", "end-node"
# Enough for every node or attempt FlyteAdmin's manager would list (its RequestLimit).
LIMIT = 10000


def _operation(start: timestamp_pb2.Timestamp, end: timestamp_pb2.Timestamp, name: str) -> metrics_pb2.Span:
    return metrics_pb2.Span(start_time=start, end_time=end, operation_id=name)


def _set(ts: timestamp_pb2.Timestamp) -> bool:
    return ts.seconds != 0 or ts.nanos != 0


def _key(ts: timestamp_pb2.Timestamp) -> tuple[int, int]:
    return ts.seconds, ts.nanos


def _plus(ts: timestamp_pb2.Timestamp, duration) -> timestamp_pb2.Timestamp:
    end = timestamp_pb2.Timestamp()
    end.FromNanoseconds(ts.ToNanoseconds() + duration.ToNanoseconds())
    return end


class ExecutionMetricsApi:
    ctx: Context

    def GetExecutionMetrics(self, request: execution_pb2.WorkflowExecutionGetMetricsRequest, context=None):
        execution = self.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=request.id))  # type: ignore[attr-defined]
        return execution_pb2.WorkflowExecutionGetMetricsResponse(span=self._execution_span(execution, request.depth))

    # -- executions and workflows ---------------------------------------------------------------
    def _execution_span(self, execution: execution_pb2.Execution, depth: int) -> metrics_pb2.Span:
        closure = execution.closure
        span = metrics_pb2.Span(start_time=closure.created_at, end_time=closure.updated_at,
                                 workflow_id=execution.id)
        if depth == 0:
            return span
        workflow = self.GetWorkflow(common_pb2.ObjectGetRequest(id=closure.workflow_id), None)  # type: ignore[attr-defined]
        nodes = self._nodes(execution.id, "")
        start = nodes.get(START)
        if start is None or not _set(start.closure.updated_at):
            span.spans.append(_operation(closure.created_at, closure.updated_at, "WORKFLOW_SETUP"))
            return span
        span.spans.append(_operation(closure.created_at, start.closure.updated_at, "WORKFLOW_SETUP"))
        compiled = workflow.closure.compiled_workflow
        span.spans.extend(self._node_spans(nodes, compiled.primary, compiled, depth - 1))
        last = _latest_upstream(END, compiled.primary, nodes)
        if last is not None and _key(closure.updated_at) >= _key(last.closure.updated_at):
            span.spans.append(_operation(last.closure.updated_at, closure.updated_at, "WORKFLOW_TEARDOWN"))
        return span

    def _nodes(self, execution_id, parent: str) -> dict[str, node_execution_pb2.NodeExecution]:
        """The node executions of one level (the execution's top level, or a parent node's children), by spec
        node id."""
        listed = self.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(  # type: ignore[attr-defined]
            workflow_execution_id=execution_id, unique_parent_id=parent, limit=LIMIT))
        return {n.metadata.spec_node_id or n.id.node_id: n for n in listed.node_executions}

    def _node_spans(self, nodes: dict[str, node_execution_pb2.NodeExecution],
                    workflow: compiler_pb2.CompiledWorkflow, compiled: compiler_pb2.CompiledWorkflowClosure,
                    depth: int) -> list[metrics_pb2.Span]:
        template_nodes = {n.id: n for n in workflow.template.nodes}
        spans = []
        for spec_id, execution in sorted(nodes.items(), key=lambda item: _key(item[1].closure.created_at)):
            if spec_id in (START, END) or spec_id not in template_nodes:
                continue
            span = self._node_span(execution, template_nodes[spec_id], compiled, depth)
            last = _latest_upstream(spec_id, workflow, nodes)
            if last is not None:
                span.spans.insert(0, _operation(last.closure.updated_at, execution.closure.created_at,
                                                "NODE_TRANSITION"))
            spans.append(span)
        return spans

    # -- nodes ----------------------------------------------------------------------------------
    def _node_span(self, execution: node_execution_pb2.NodeExecution, node: workflow_pb2.Node,
                   compiled: compiler_pb2.CompiledWorkflowClosure, depth: int) -> metrics_pb2.Span:
        closure = execution.closure
        span = metrics_pb2.Span(start_time=closure.created_at, end_time=closure.updated_at, node_id=execution.id)
        if depth == 0:
            return span
        target = node.WhichOneof("target")
        if target == "gate_node":
            span.spans.extend(_gate(closure))
        elif target == "task_node":
            span.spans.extend(self._task_node(execution, depth - 1))
        elif target == "workflow_node" and node.workflow_node.HasField("launchplan_ref"):
            span.spans.extend(self._launch_plan_node(execution, depth - 1))
        elif target in ("workflow_node", "branch_node"):
            sub = next((w for w in compiled.sub_workflows
                        if w.template.id == node.workflow_node.sub_workflow_ref), None) if target == "workflow_node" else None
            span.spans.extend(self._children(execution, sub, compiled, depth - 1))
        return span

    def _attempts(self, execution: node_execution_pb2.NodeExecution) -> list[task_execution_pb2.TaskExecution]:
        listed = self.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(  # type: ignore[attr-defined]
            node_execution_id=execution.id, limit=LIMIT))
        return sorted(listed.task_executions, key=lambda t: _key(t.closure.created_at))

    def _task_node(self, execution: node_execution_pb2.NodeExecution, depth: int) -> list[metrics_pb2.Span]:
        closure = execution.closure
        attempts = self._attempts(execution)
        if not attempts:
            return [_operation(closure.created_at, closure.updated_at, "NODE_SETUP")]
        spans = [_operation(closure.created_at, attempts[0].closure.created_at, "NODE_SETUP")]
        for i, attempt in enumerate(attempts):
            if i:
                spans.append(_operation(attempts[i - 1].closure.updated_at, attempt.closure.created_at, "NODE_RESET"))
            if depth != 0:
                spans.append(_attempt(attempt))
        last = attempts[-1].closure.updated_at
        if execution.metadata.is_parent_node:
            # A dynamic task: the nodes its attempt ran, in the workflow it compiled.
            dynamic = self.GetNodeExecutionData(node_execution_pb2.NodeExecutionGetDataRequest(  # type: ignore[attr-defined]
                id=execution.id)).dynamic_workflow.compiled_workflow
            children = self._nodes(execution.id.execution_id, execution.id.node_id)
            spans.extend(self._node_spans(children, dynamic.primary, dynamic, depth))
            last = max([last] + [c.closure.updated_at for c in children.values()], key=_key)
        if _key(closure.updated_at) >= _key(last):
            spans.append(_operation(last, closure.updated_at, "NODE_TEARDOWN"))
        return spans

    def _children(self, execution: node_execution_pb2.NodeExecution, sub: compiler_pb2.CompiledWorkflow | None,
                  compiled: compiler_pb2.CompiledWorkflowClosure, depth: int) -> list[metrics_pb2.Span]:
        """A subworkflow's or a branch's node: the nodes it ran, between its setup and its teardown."""
        closure = execution.closure
        children = self._nodes(execution.id.execution_id, execution.id.node_id)
        if not children:
            return [_operation(closure.created_at, closure.updated_at, "NODE_SETUP")]
        first = min((c.closure.created_at for c in children.values()), key=_key)
        spans = [_operation(closure.created_at, first, "NODE_SETUP")]
        if sub is None:  # a branch: the case that ran is a node of the parent workflow
            workflow = compiler_pb2.CompiledWorkflow()
            workflow.template.nodes.extend(_branch_cases(execution, compiled))
            sub = workflow
        spans.extend(self._node_spans(children, sub, compiled, depth))
        last = max((c.closure.updated_at for c in children.values()), key=_key)
        if _key(closure.updated_at) >= _key(last):
            spans.append(_operation(last, closure.updated_at, "NODE_TEARDOWN"))
        return spans

    def _launch_plan_node(self, execution: node_execution_pb2.NodeExecution, depth: int) -> list[metrics_pb2.Span]:
        closure = execution.closure
        child_id = closure.workflow_node_metadata.executionId
        if not child_id.name:
            return [_operation(closure.created_at, closure.updated_at, "NODE_SETUP")]
        child = self.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=child_id))  # type: ignore[attr-defined]
        spans = [_operation(closure.created_at, child.closure.created_at, "NODE_SETUP"),
                 self._execution_span(child, depth)]
        if _key(closure.updated_at) >= _key(child.closure.updated_at):
            spans.append(_operation(child.closure.updated_at, closure.updated_at, "NODE_TEARDOWN"))
        return spans


def _attempt(attempt: task_execution_pb2.TaskExecution) -> metrics_pb2.Span:
    closure = attempt.closure
    span = metrics_pb2.Span(start_time=closure.created_at, end_time=closure.updated_at, task_id=attempt.id)
    if not _set(closure.started_at):
        span.spans.append(_operation(closure.created_at, closure.updated_at, "TASK_SETUP"))
        return span
    span.spans.append(_operation(closure.created_at, closure.started_at, "TASK_SETUP"))
    if not (closure.duration.seconds or closure.duration.nanos):
        span.spans.append(_operation(closure.started_at, closure.updated_at, "TASK_RUNTIME"))
        return span
    end = _plus(closure.started_at, closure.duration)
    span.spans.append(_operation(closure.started_at, end, "TASK_RUNTIME"))
    if _key(closure.updated_at) >= _key(end):
        span.spans.append(_operation(end, closure.updated_at, "TASK_TEARDOWN"))
    return span


def _gate(closure: node_execution_pb2.NodeExecutionClosure) -> list[metrics_pb2.Span]:
    if not _set(closure.started_at):
        return [_operation(closure.created_at, closure.updated_at, "NODE_SETUP")]
    spans = [_operation(closure.created_at, closure.started_at, "NODE_SETUP")]
    if not (closure.duration.seconds or closure.duration.nanos):
        spans.append(_operation(closure.started_at, closure.updated_at, "NODE_IDLE"))
        return spans
    end = _plus(closure.started_at, closure.duration)
    spans.append(_operation(closure.started_at, end, "NODE_IDLE"))
    spans.append(_operation(end, closure.updated_at, "NODE_TEARDOWN"))
    return spans


def _latest_upstream(node_id: str, workflow: compiler_pb2.CompiledWorkflow,
                     nodes: dict[str, node_execution_pb2.NodeExecution]) -> node_execution_pb2.NodeExecution | None:
    """Of the node's upstream nodes that ran, the one that ended last."""
    upstream = workflow.connections.upstream.get(node_id)
    ran = [nodes[i] for i in (upstream.ids if upstream else ()) if i in nodes]
    return max(ran, key=lambda n: _key(n.closure.updated_at), default=None)


def _branch_cases(execution: node_execution_pb2.NodeExecution,
                  compiled: compiler_pb2.CompiledWorkflowClosure) -> list[workflow_pb2.Node]:
    """The nodes a branch node may run (its if/else cases), from the workflows of the closure."""
    found = []
    for workflow in [compiled.primary, *compiled.sub_workflows]:
        for node in workflow.template.nodes:
            if node.id == (execution.metadata.spec_node_id or execution.id.node_id) and node.HasField("branch_node"):
                branch = node.branch_node.if_else
                found += [branch.case.then_node, *(c.then_node for c in branch.other), branch.else_node]
    return [n for n in found if n.id]
