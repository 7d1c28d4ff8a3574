"""ExecutionsApi: FlyteAdmin's workflow-execution RPCs (create, relaunch, recover, get, list, data,
terminate, archive).

Creation lives in `launch.py` (shared with the scheduler and launch-plan nodes);
phases change only through the engine's events (`events.py`). Terminate records
the request and wakes the engine, which aborts and reports ABORTED.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from sqlalchemy import select

from flytelite.admin.exec_data import ExecutionData
from flytelite.admin.filters import Field, apply_filters, apply_sort, enum_value, number, page, parse_time
from flytelite.admin.launch import launch_execution, relaunch_request
from flytelite.context import Context, ExecutionKey
from flytelite.errors import FailedPrecondition, InvalidArgument
from flytelite.idl import ids
from flytelite.idl.phases import WORKFLOW_TERMINAL, WorkflowPhase, workflow_phase_name
from flytelite.idl.times import to_timestamp
from flytelite.runs import store as runs_store
from flytelite.store import executions as repo
from flytelite.store.models import Execution, ExecutionTag, FlyteWorkflow

# List responses trim error messages, as FlyteAdmin does; Get returns them whole.
TRIMMED_ERROR_LENGTH = 100
_STATE_FILTER = re.compile(r"\(\s*(execution\.)?state\s*,")


def utc_time(text: str) -> datetime:
    """A filter's time, in UTC like every stored time."""
    return parse_time(text).astimezone(timezone.utc)


EXECUTION_FIELDS = {
    "name": Field(Execution.name),
    "phase": Field(Execution.phase, enum_value(WorkflowPhase)),
    "mode": Field(Execution.mode, enum_value(execution_pb2.ExecutionMetadata.ExecutionMode)),
    "state": Field(Execution.state, enum_value(execution_pb2.ExecutionState)),
    "user": Field(Execution.launched_by),
    "error_kind": Field(Execution.error_kind),
    "created_at": Field(Execution.created_at, utc_time),
    "execution_created_at": Field(Execution.created_at, utc_time),
    "updated_at": Field(Execution.updated_at, utc_time),
    "execution_updated_at": Field(Execution.updated_at, utc_time),
    "started_at": Field(Execution.started_at, utc_time),
    "duration": Field(Execution.duration, number),
    "launch_plan.name": Field(Execution.launch_plan_name),
    "launch_plan.version": Field(Execution.launch_plan_version),
    "workflow.name": Field(Execution.workflow_name),
    "workflow.version": Field(Execution.workflow_version),
    "task.name": Field(Execution.task_name),
    # Labels and tags (flytekit's @eager cleanup lists its sub-executions by their eager-exec label).
    "execution_tag.key": Field(ExecutionTag.key),
    "execution_tag.value": Field(ExecutionTag.value),
}


def execution_to_proto(row: Execution, trim_error: bool = False) -> execution_pb2.Execution:
    spec = execution_pb2.ExecutionSpec.FromString(row.spec_pb)
    closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
    if trim_error and closure.HasField("error") and len(closure.error.message) > TRIMMED_ERROR_LENGTH:
        closure.error.message = closure.error.message[:TRIMMED_ERROR_LENGTH]
    return execution_pb2.Execution(id=repo.execution_identifier(row), spec=spec, closure=closure)


class ExecutionsApi:
    ctx: Context
    data: ExecutionData

    def CreateExecution(self, request: execution_pb2.ExecutionCreateRequest, context=None):
        return execution_pb2.ExecutionCreateResponse(id=launch_execution(self.ctx, request))

    def RelaunchExecution(self, request: execution_pb2.ExecutionRelaunchRequest, context=None):
        with self.ctx.db.session() as session:
            original = repo.get_execution(session, request.id)
        user_inputs = (self.ctx.blobs.read_proto_if_exists(original.user_inputs_uri, literals_pb2.LiteralMap)
                       if original.user_inputs_uri else None)
        if user_inputs is None:
            raise FailedPrecondition(f"{ids.describe_execution(request.id)} has no stored inputs to relaunch with")
        create = relaunch_request(original, user_inputs, request.name, request.overwrite_cache)
        return execution_pb2.ExecutionCreateResponse(id=launch_execution(self.ctx, create))

    def GetExecution(self, request: execution_pb2.WorkflowExecutionGetRequest, context=None):
        _require_id(request.id)
        with self.ctx.db.session() as session:
            return execution_to_proto(repo.get_execution(session, request.id))

    def ListExecutions(self, request: common_pb2.ResourceListRequest, context=None):
        if not request.id.project or not request.id.domain:
            raise InvalidArgument("listing executions needs id.project and id.domain")
        query = select(Execution).where(Execution.project == request.id.project,
                                        Execution.domain == request.id.domain)
        if request.id.name:
            query = query.where(Execution.name == request.id.name)
        if not _STATE_FILTER.search(request.filters or ""):
            # Archived executions stay hidden unless the caller asks about state.
            query = query.where(Execution.state == execution_pb2.EXECUTION_ACTIVE)
        if "execution_tag." in (request.filters or ""):
            # One joined tag row must match every execution_tag condition, as in FlyteAdmin.
            query = query.join(ExecutionTag, (ExecutionTag.project == Execution.project)
                               & (ExecutionTag.domain == Execution.domain)
                               & (ExecutionTag.execution_name == Execution.name)).distinct()
        query = apply_filters(query, request.filters, EXECUTION_FIELDS)
        sort_by = request.sort_by if request.HasField("sort_by") else None
        query = apply_sort(query, sort_by, EXECUTION_FIELDS, default=Execution.created_at).order_by(Execution.name)
        with self.ctx.db.session() as session:
            rows, token = page(session, query, request.limit, request.token)
            executions = [execution_to_proto(r, trim_error=True) for r in rows]
        return execution_pb2.ExecutionList(executions=executions, token=token)

    def GetExecutionData(self, request: execution_pb2.WorkflowExecutionGetDataRequest, context=None):
        _require_id(request.id)
        with self.ctx.db.session() as session:
            row = repo.get_execution(session, request.id)
        closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        full_inputs, inputs = self.data.inputs(row.inputs_uri)
        full_outputs, outputs = self.data.outputs(
            closure.output_data if closure.HasField("output_data") else None, closure.outputs.uri)
        return execution_pb2.WorkflowExecutionGetDataResponse(
            inputs=inputs, outputs=outputs, full_inputs=full_inputs, full_outputs=full_outputs)

    def TerminateExecution(self, request: execution_pb2.ExecutionTerminateRequest, context=None):
        _require_id(request.id)
        terminate_execution(self.ctx, request.id, request.cause)
        return execution_pb2.ExecutionTerminateResponse()

    def RecoverExecution(self, request: execution_pb2.ExecutionRecoverRequest, context=None):
        _require_id(request.id)
        parent = request.metadata.parent_node_execution if request.metadata.HasField("parent_node_execution") else None
        return execution_pb2.ExecutionCreateResponse(id=recover_execution(self.ctx, request.id, request.name, parent))

    def UpdateExecution(self, request: execution_pb2.ExecutionUpdateRequest, context=None):
        """Archive (or restore) an execution: it leaves (or rejoins) the default execution lists."""
        _require_id(request.id)
        now = self.ctx.clock.now()
        with self.ctx.db.session() as session:
            row = repo.get_execution(session, request.id, for_update=True)
            closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
            closure.state_change_details.CopyFrom(execution_pb2.ExecutionStateChangeDetails(
                state=request.state, occurred_at=to_timestamp(now), principal=""))
            row.state = request.state
            row.closure_pb = closure.SerializeToString()
        return execution_pb2.ExecutionUpdateResponse()


def terminate_execution(ctx: Context, exec_id: identifier_pb2.WorkflowExecutionIdentifier, cause: str) -> None:
    """Record the request to abort and wake the engine (TerminateExecution; also a parent's cascading abort)."""
    key = ExecutionKey(exec_id.project, exec_id.domain, exec_id.name)
    with ctx.db.session() as session:
        row = repo.get_execution(session, exec_id, for_update=True)
        if row.phase in WORKFLOW_TERMINAL:
            raise FailedPrecondition(f"{ids.describe_execution(exec_id)} already finished "
                                     f"({workflow_phase_name(row.phase)}); there is nothing to terminate")
        closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        # The phase becomes ABORTED only when the engine reports it; until then the execution is aborting.
        closure.abort_metadata.cause = cause
        closure.abort_metadata.principal = ""
        closure.phase = row.phase = WorkflowPhase.ABORTING
        row.closure_pb = closure.SerializeToString()
        flyte_workflow = session.get(FlyteWorkflow, key)
        if flyte_workflow is not None:
            flyte_workflow.abort_cause = cause or "terminated"
            flyte_workflow.updated_at = ctx.clock.now()
    ctx.notify_engine(key)


def recover_execution(ctx: Context, original_id: identifier_pb2.WorkflowExecutionIdentifier, name: str = "",
                      parent: identifier_pb2.NodeExecutionIdentifier | None = None,
                      ) -> identifier_pb2.WorkflowExecutionIdentifier:
    """FlyteAdmin's RecoverExecution: the original's launch plan and inputs again, as mode RECOVERED.

    The engine copies the outputs of every node the original ran to success and reruns the rest.
    """
    with ctx.db.session() as session:
        original = repo.get_execution(session, original_id)
    user_inputs = (ctx.blobs.read_proto_if_exists(original.user_inputs_uri, literals_pb2.LiteralMap)
                   if original.user_inputs_uri else None)
    if user_inputs is None:
        raise FailedPrecondition(f"{ids.describe_execution(original_id)} has no stored inputs to recover with")
    create = relaunch_request(original, user_inputs, name, overwrite_cache=False)
    spec = create.spec
    spec.overwrite_cache = execution_pb2.ExecutionSpec.FromString(original.spec_pb).overwrite_cache
    spec.metadata.mode = execution_pb2.ExecutionMetadata.RECOVERED
    if parent is not None:
        spec.metadata.parent_node_execution.CopyFrom(parent)
    return launch_execution(ctx, create)


def _require_id(ident) -> None:
    missing = [f for f in ("project", "domain", "name") if not getattr(ident, f)]
    if missing:
        raise InvalidArgument(f"execution id is missing {', '.join(missing)}")


def running_creator(ctx: Context, project: str, domain: str, name: str) -> str | None:
    """Who created a running execution or Flyte 2 run ("" when no one signed in did: a schedule, a server
    without authentication); None when it does not exist or has finished (its tasks get no more tokens)."""
    with ctx.db.session() as s:
        row = s.get(Execution, (project, domain, name))
        if row is None:
            return runs_store.running_creator(s, ExecutionKey(project, domain, name))
        if row.phase in WORKFLOW_TERMINAL:
            return None
        return execution_pb2.ExecutionSpec.FromString(row.spec_pb).metadata.principal
