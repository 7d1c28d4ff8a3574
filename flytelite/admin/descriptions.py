"""GetDescriptionEntity / ListDescriptionEntities: the descriptions `pyflyte register` sends with each task and
workflow version (short description, long description, source code link), kept as part of its stored spec, as
FlyteAdmin keeps them beside each version."""

from __future__ import annotations

from flyteidl.admin import common_pb2, description_entity_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import select

from flytelite.admin import filters
from flytelite.admin.entity_common import require_project, typed_id, validate_identifier, validate_named_id
from flytelite.admin.tasks import TASK_FIELDS
from flytelite.admin.workflows import WORKFLOW_FIELDS
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.ids import describe
from flytelite.store.models import Task, Workflow

_KINDS: dict[int, tuple] = {idpb.TASK: (Task, task_pb2.TaskSpec, TASK_FIELDS), idpb.WORKFLOW: (Workflow, workflow_pb2.WorkflowSpec,
                                                                            WORKFLOW_FIELDS)}


def _kind(resource_type: int):
    if resource_type not in _KINDS:
        raise InvalidArgument("description entities exist for tasks and workflows only; set resource_type to "
                              "TASK or WORKFLOW")
    return _KINDS[resource_type]


def _entity(row, spec_type, resource_type: idpb.ResourceType) -> description_entity_pb2.DescriptionEntity | None:
    spec = spec_type.FromString(row.spec_pb)
    if not spec.HasField("description"):
        return None
    entity = description_entity_pb2.DescriptionEntity()
    entity.CopyFrom(spec.description)
    entity.id.CopyFrom(idpb.Identifier(resource_type=resource_type, project=row.project, domain=row.domain,
                                       name=row.name, version=row.version))
    return entity


class DescriptionEntitiesApi:
    ctx: Context

    def GetDescriptionEntity(self, request: common_pb2.ObjectGetRequest, context=None):
        model, spec_type, _ = _kind(request.id.resource_type)
        validate_identifier(request.id, request.id.resource_type)
        ident = typed_id(request.id, request.id.resource_type)
        with self.ctx.db.session() as session:
            row = session.get(model, (ident.project, ident.domain, ident.name, ident.version))
        entity = _entity(row, spec_type, ident.resource_type) if row is not None else None
        if entity is None:
            raise NotFound(f"the description entity of {describe(ident)} does not exist"
                           + ("" if row is not None else f": {describe(ident)} is not registered"))
        return entity

    def ListDescriptionEntities(self, request: description_entity_pb2.DescriptionEntityListRequest, context=None):
        model, spec_type, fields = _kind(request.resource_type)
        ident = request.id
        validate_named_id(ident.project, ident.domain, ident.name, "listing description entities")
        with self.ctx.db.session() as session:
            require_project(session, ident.project)
            query = select(model).where(model.project == ident.project, model.domain == ident.domain,
                                        model.name == ident.name)
            query = filters.apply_filters(query, request.filters, fields)
            sort_by = request.sort_by if request.HasField("sort_by") else None
            query = filters.apply_sort(query, sort_by, fields, default=model.created_at).order_by(model.version)
            rows, token = filters.page(session, query, request.limit, request.token)
        found = [_entity(row, spec_type, request.resource_type) for row in rows]
        return description_entity_pb2.DescriptionEntityList(
            descriptionEntities=[e for e in found if e is not None], token=token)
