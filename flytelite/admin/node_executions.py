"""NodeExecutionsApi: FlyteAdmin's node-execution reads (list, get, data, list for a task attempt).

Rows come from the engine's node events (`events.py`). Lists show one level of
the node tree at a time: top-level nodes by default, the children of a branch,
subworkflow or dynamic node when `unique_parent_id` names it.
"""

from __future__ import annotations

from flyteidl.admin import common_pb2, node_execution_pb2
from flyteidl.core import compiler_pb2, identifier_pb2
from sqlalchemy import Select, select

from flytelite.admin.exec_data import ExecutionData, node_flyte_urls
from flytelite.admin.executions import TRIMMED_ERROR_LENGTH, utc_time
from flytelite.admin.filters import Field, apply_filters, apply_sort, enum_value, number, page
from flytelite.admin.read_cache import ReadCache, kept_when_finished
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.phases import NODE_TERMINAL, NodePhase
from flytelite.store import executions as repo
from flytelite.store.models import NodeExecution

NODE_EXECUTION_FIELDS = {
    "node_id": Field(NodeExecution.node_id),
    "phase": Field(NodeExecution.phase, enum_value(NodePhase)),
    "created_at": Field(NodeExecution.created_at, utc_time),
    "node_execution_created_at": Field(NodeExecution.created_at, utc_time),
    "updated_at": Field(NodeExecution.updated_at, utc_time),
    "node_execution_updated_at": Field(NodeExecution.updated_at, utc_time),
    "started_at": Field(NodeExecution.started_at, utc_time),
    "duration": Field(NodeExecution.duration, number),
}


def ordered(query: Select, sort_by: common_pb2.Sort | None, fields: dict[str, Field], *tiebreak) -> Select:
    """The caller's sort, else oldest first (the order the engine reported them); ties in row order."""
    if sort_by is not None and sort_by.key:
        query = apply_sort(query, sort_by, fields, default=tiebreak[-1])
    else:
        query = query.order_by(fields["created_at"].column.asc())
    return query.order_by(*(column.asc() for column in tiebreak))


def node_execution_to_proto(row: NodeExecution, trim_error: bool = False) -> node_execution_pb2.NodeExecution:
    closure = node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
    if trim_error and closure.HasField("error") and len(closure.error.message) > TRIMMED_ERROR_LENGTH:
        closure.error.message = closure.error.message[:TRIMMED_ERROR_LENGTH]
    return node_execution_pb2.NodeExecution(
        id=repo.node_execution_identifier(row), input_uri=row.input_uri, closure=closure,
        metadata=node_execution_pb2.NodeExecutionMetaData.FromString(row.metadata_pb),
    )


class NodeExecutionsApi:
    ctx: Context
    data: ExecutionData
    reads: ReadCache

    def ListNodeExecutions(self, request: node_execution_pb2.NodeExecutionListRequest, context=None):
        ex = request.workflow_execution_id
        if not (ex.project and ex.domain and ex.name):
            raise InvalidArgument("listing node executions needs workflow_execution_id with project, domain and name")
        with self.ctx.db.session() as session:
            query = select(NodeExecution).where(NodeExecution.project == ex.project,
                                                NodeExecution.domain == ex.domain,
                                                NodeExecution.execution_name == ex.name)
            if request.unique_parent_id:
                parent = repo.get_node_execution(session, identifier_pb2.NodeExecutionIdentifier(
                    execution_id=ex, node_id=request.unique_parent_id))
                query = query.where(NodeExecution.parent_id == parent.id)
            else:
                query = query.where(NodeExecution.parent_id.is_(None))
            return self._list(session, query, request)

    def ListNodeExecutionsForTask(self, request: node_execution_pb2.NodeExecutionForTaskListRequest, context=None):
        """Nodes a task attempt spawned (a dynamic task's subworkflow): its node's children of that attempt."""
        with self.ctx.db.session() as session:
            attempt = repo.get_task_execution(session, request.task_execution_id)
            node = repo.get_node_execution(session, request.task_execution_id.node_execution_id)
            query = select(NodeExecution).where(NodeExecution.parent_id == node.id)
            rows = self._list(session, query, request)
        rows_for_attempt = [n for n in rows.node_executions if n.metadata.retry_group in ("", str(attempt.retry_attempt))]
        return node_execution_pb2.NodeExecutionList(node_executions=rows_for_attempt, token=rows.token)

    def GetNodeExecution(self, request: node_execution_pb2.NodeExecutionGetRequest, context=None):
        with self.ctx.db.session() as session:
            return node_execution_to_proto(repo.get_node_execution(session, request.id))

    def GetDynamicNodeWorkflow(self, request: node_execution_pb2.GetDynamicNodeWorkflowRequest, context=None):
        """The workflow a dynamic node compiled at run time, as FlyteAdmin serves it."""
        with self.ctx.db.session() as session:
            row = repo.get_node_execution(session, request.id)
        if not row.dynamic_workflow_pb:
            raise NotFound("node does not contain dynamic workflow")
        return node_execution_pb2.DynamicNodeWorkflowResponse(
            compiled_workflow=compiler_pb2.CompiledWorkflowClosure.FromString(row.dynamic_workflow_pb))

    @kept_when_finished
    def GetNodeExecutionData(self, request: node_execution_pb2.NodeExecutionGetDataRequest, context=None):
        with self.ctx.db.session() as session:
            row = repo.get_node_execution(session, request.id)
        closure = node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
        full_inputs, inputs = self.data.inputs(row.input_uri)
        full_outputs, outputs = self.data.outputs(
            closure.output_data if closure.HasField("output_data") else None, closure.output_uri)
        response = node_execution_pb2.NodeExecutionGetDataResponse(
            inputs=inputs, outputs=outputs, full_inputs=full_inputs, full_outputs=full_outputs,
            flyte_urls=node_flyte_urls(request.id, bool(closure.deck_uri)),
        )
        if row.dynamic_workflow_pb:
            compiled = compiler_pb2.CompiledWorkflowClosure.FromString(row.dynamic_workflow_pb)
            response.dynamic_workflow.id.CopyFrom(compiled.primary.template.id)
            response.dynamic_workflow.compiled_workflow.CopyFrom(compiled)
            response.dynamic_workflow.dynamic_job_spec_uri = closure.dynamic_job_spec_uri
        return response, row.phase in NODE_TERMINAL

    def _list(self, session, query: Select, request) -> node_execution_pb2.NodeExecutionList:
        query = apply_filters(query, request.filters, NODE_EXECUTION_FIELDS)
        sort_by = request.sort_by if request.HasField("sort_by") else None
        query = ordered(query, sort_by, NODE_EXECUTION_FIELDS, NodeExecution.id)
        rows, token = page(session, query, request.limit, request.token)
        return node_execution_pb2.NodeExecutionList(
            node_executions=[node_execution_to_proto(r, trim_error=True) for r in rows], token=token)
