"""Tasks in FlyteAdmin's API: register (compile, store once), get, list versions and names."""

from __future__ import annotations

from flyteidl.admin import common_pb2, task_pb2
from flyteidl.core import identifier_pb2 as idpb

from flytelite.admin.entity_common import (
    digest,
    entity_fields,
    insert_once,
    list_entities,
    list_entity_ids,
    not_found,
    typed_id,
    validate_identifier,
    validate_length,
    validate_project_domain,
)
from flytelite.admin.filters import Field
from flytelite.compiler import CompileError, compile_task
from flytelite.context import Context
from flytelite.errors import InvalidArgument
from flytelite.idl.ids import describe
from flytelite.idl.times import to_timestamp
from flytelite.store import entities
from flytelite.store.models import Task

TASK_FIELDS = entity_fields(Task, task_type=Field(Task.task_type), type=Field(Task.task_type))


def create_task(ctx: Context, ident: idpb.Identifier, spec: task_pb2.TaskSpec) -> bool:
    """Validate, compile and store one task version; True if new, False for an identical re-registration."""
    validate_identifier(ident, idpb.TASK)
    ident = typed_id(ident, idpb.TASK)
    with ctx.db.session() as session:
        validate_project_domain(session, ident.project, ident.domain, for_write=True)
    if not spec.HasField("template"):
        raise InvalidArgument(f"{describe(ident)}: the task spec has no template")
    if not spec.template.type:
        raise InvalidArgument(f"{describe(ident)}: the task template has no type")
    if not spec.template.HasField("interface"):
        raise InvalidArgument(f"{describe(ident)}: the task template has no interface")
    validate_length(f"{describe(ident)}: task type", spec.template.type)
    validate_length(f"{describe(ident)}: cache version", spec.template.metadata.discovery_version)

    spec = _copy(spec)
    # The stored template carries the id it was registered under, as FlyteAdmin does.
    spec.template.id.CopyFrom(ident)
    try:
        compiled = compile_task(spec.template)
    except CompileError as exc:
        raise InvalidArgument(f"{describe(ident)} does not compile:\n{exc}") from None

    now = ctx.clock.now()
    closure = task_pb2.TaskClosure(compiled_task=compiled, created_at=to_timestamp(now))
    # Identity is the template (what runs), not the description that travels beside it.
    task_digest = digest(spec.template)
    return insert_once(
        ctx, Task, ident, task_digest,
        lambda: Task(project=ident.project, domain=ident.domain, name=ident.name, version=ident.version,
                     digest=task_digest, spec_pb=spec.SerializeToString(),
                     closure_pb=closure.SerializeToString(), created_at=now, task_type=spec.template.type),
    )


def get_task(ctx: Context, ident: idpb.Identifier) -> task_pb2.Task:
    validate_identifier(ident, idpb.TASK)
    with ctx.db.session() as session:
        task = entities.get_task(session, ident)
        if task is None:
            raise not_found(session, typed_id(ident, idpb.TASK))
        return task


def _copy(spec: task_pb2.TaskSpec) -> task_pb2.TaskSpec:
    out = task_pb2.TaskSpec()
    out.CopyFrom(spec)
    return out


class TasksApi:
    ctx: Context

    def CreateTask(self, request: task_pb2.TaskCreateRequest, context) -> task_pb2.TaskCreateResponse:
        validate_identifier(request.id, idpb.TASK, request.HasField("id"))
        create_task(self.ctx, request.id, request.spec)
        return task_pb2.TaskCreateResponse()

    def GetTask(self, request: common_pb2.ObjectGetRequest, context) -> task_pb2.Task:
        return get_task(self.ctx, request.id)

    def ListTasks(self, request: common_pb2.ResourceListRequest, context) -> task_pb2.TaskList:
        tasks, token = list_entities(self.ctx, Task, request, TASK_FIELDS)
        return task_pb2.TaskList(tasks=tasks, token=token)

    def ListTaskIds(self, request: common_pb2.NamedEntityIdentifierListRequest,
                    context) -> common_pb2.NamedEntityIdentifierList:
        return list_entity_ids(self.ctx, Task, request, TASK_FIELDS)
