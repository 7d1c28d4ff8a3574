"""TaskExecutionsApi: FlyteAdmin's task-execution reads (the attempts of a node: list, get, data).

Rows come from the engine's task events (`task_events.py`), one per retry attempt.
"""

from __future__ import annotations

from flyteidl.admin import node_execution_pb2, task_execution_pb2
from sqlalchemy import bindparam, select

from flytelite.admin.exec_data import ExecutionData, task_flyte_urls
from flytelite.admin.executions import utc_time
from flytelite.admin.filters import Field, apply_filters, enum_value, integer, number, page
from flytelite.admin.node_executions import ordered
from flytelite.admin.read_cache import ReadCache, kept_when_finished
from flytelite.context import Context
from flytelite.errors import InvalidArgument
from flytelite.idl.phases import NODE_TERMINAL, TASK_TERMINAL, TaskPhase
from flytelite.store import executions as repo
from flytelite.store.models import NodeExecution, TaskExecution

TASK_EXECUTION_FIELDS = {
    "phase": Field(TaskExecution.phase, enum_value(TaskPhase)),
    "retry_attempt": Field(TaskExecution.retry_attempt, integer),
    "task.name": Field(TaskExecution.task_name),
    "task.version": Field(TaskExecution.task_version),
    "created_at": Field(TaskExecution.created_at, utc_time),
    "task_execution_created_at": Field(TaskExecution.created_at, utc_time),
    "updated_at": Field(TaskExecution.updated_at, utc_time),
    "task_execution_updated_at": Field(TaskExecution.updated_at, utc_time),
    "started_at": Field(TaskExecution.started_at, utc_time),
    "duration": Field(TaskExecution.duration, number),
}


# A node's attempts, which a client watching an execution lists for every node on every poll: the statement built
# once (building it cost SQLAlchemy more than running it), and once more in the default order.
_NODE_ATTEMPTS = select(TaskExecution).where(
    TaskExecution.project == bindparam("project"), TaskExecution.domain == bindparam("domain"),
    TaskExecution.execution_name == bindparam("execution_name"), TaskExecution.node_id == bindparam("node_id"),
)
_NODE_ATTEMPTS_IN_ORDER = ordered(_NODE_ATTEMPTS, None, TASK_EXECUTION_FIELDS, TaskExecution.retry_attempt,
                                  TaskExecution.id)


def task_execution_to_proto(row: TaskExecution, node: NodeExecution | None) -> task_execution_pb2.TaskExecution:
    # A dynamic task's attempt is the parent of the nodes it yielded.
    is_parent = node is not None and node_execution_pb2.NodeExecutionMetaData.FromString(node.metadata_pb).is_dynamic
    return task_execution_pb2.TaskExecution(
        id=repo.task_execution_identifier(row), input_uri=row.input_uri,
        closure=task_execution_pb2.TaskExecutionClosure.FromString(row.closure_pb), is_parent=is_parent,
    )


class TaskExecutionsApi:
    ctx: Context
    data: ExecutionData
    reads: ReadCache

    @kept_when_finished
    def ListTaskExecutions(self, request: task_execution_pb2.TaskExecutionListRequest, context=None):
        node_id = request.node_execution_id
        ex = node_id.execution_id
        if not (ex.project and ex.domain and ex.name and node_id.node_id):
            raise InvalidArgument("listing task executions needs node_execution_id with its execution id and node id")
        sort_by = request.sort_by if request.HasField("sort_by") else None
        if request.filters or sort_by is not None:
            query = apply_filters(_NODE_ATTEMPTS, request.filters, TASK_EXECUTION_FIELDS)
            query = ordered(query, sort_by, TASK_EXECUTION_FIELDS, TaskExecution.retry_attempt, TaskExecution.id)
        else:
            query = _NODE_ATTEMPTS_IN_ORDER
        ids = {"project": ex.project, "domain": ex.domain, "execution_name": ex.name, "node_id": node_id.node_id}
        with self.ctx.db.session() as session:
            node = repo.find_node_execution(session, ex, node_id.node_id)
            rows, token = page(session, query, request.limit, request.token, ids)
            attempts = [task_execution_to_proto(r, node) for r in rows]
        finished = node is not None and node.phase in NODE_TERMINAL and all(r.phase in TASK_TERMINAL for r in rows)
        return task_execution_pb2.TaskExecutionList(task_executions=attempts, token=token), finished

    @kept_when_finished
    def GetTaskExecution(self, request: task_execution_pb2.TaskExecutionGetRequest, context=None):
        with self.ctx.db.session() as session:
            row = repo.get_task_execution(session, request.id)
            node = repo.find_node_execution(session, request.id.node_execution_id.execution_id, row.node_id)
            return task_execution_to_proto(row, node), row.phase in TASK_TERMINAL

    @kept_when_finished
    def GetTaskExecutionData(self, request: task_execution_pb2.TaskExecutionGetDataRequest, context=None):
        with self.ctx.db.session() as session:
            row = repo.get_task_execution(session, request.id)
        closure = task_execution_pb2.TaskExecutionClosure.FromString(row.closure_pb)
        full_inputs, inputs = self.data.inputs(row.input_uri)
        full_outputs, outputs = self.data.outputs(
            closure.output_data if closure.HasField("output_data") else None, closure.output_uri)
        return task_execution_pb2.TaskExecutionGetDataResponse(
            inputs=inputs, outputs=outputs, full_inputs=full_inputs, full_outputs=full_outputs,
            flyte_urls=task_flyte_urls(request.id),
        ), row.phase in TASK_TERMINAL
