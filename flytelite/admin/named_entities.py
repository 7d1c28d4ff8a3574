"""Named entities in FlyteAdmin's API: metadata (description, state) shared by every version of a name.

A named entity exists once any version of the task, workflow or launch plan is
registered; its metadata row appears only when someone updates it, so an absent
row reads as ACTIVE with no description (FlyteAdmin's COALESCE).
"""

from __future__ import annotations

from flyteidl.admin import common_pb2
from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import and_, func, select

from flytelite.admin import filters
from flytelite.admin.entity_common import kind_name, require_project, validate_named_id
from flytelite.admin.filters import Field, enum_value
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.store import entities
from flytelite.store.models import NamedEntity


def _model(resource_type: int):
    model = entities.MODEL_FOR_RESOURCE.get(resource_type)
    if model is None:
        raise InvalidArgument(f"named entities are tasks, workflows or launch plans (resource types "
                              f"{idpb.TASK}, {idpb.WORKFLOW}, {idpb.LAUNCH_PLAN}); got resource type {resource_type}")
    return model


def _require_exists(session, resource_type: int, ident: common_pb2.NamedEntityIdentifier) -> None:
    require_project(session, ident.project)
    if not entities.entity_exists(session, _model(resource_type), ident.project, ident.domain, ident.name):
        raise NotFound(f"{kind_name(resource_type)} {ident.project}/{ident.domain}/{ident.name} does not exist "
                       f"(no version of it is registered)")


class NamedEntitiesApi:
    ctx: Context

    def GetNamedEntity(self, request: common_pb2.NamedEntityGetRequest, context) -> common_pb2.NamedEntity:
        ident = request.id
        validate_named_id(ident.project, ident.domain, ident.name, "GetNamedEntity")
        with self.ctx.db.session() as session:
            _require_exists(session, request.resource_type, ident)
            meta = entities.named_entity_metadata(session, request.resource_type, ident.project, ident.domain,
                                                  ident.name)
            return entities.named_entity_to_proto(request.resource_type, ident.project, ident.domain, ident.name,
                                                  meta)

    def UpdateNamedEntity(self, request: common_pb2.NamedEntityUpdateRequest,
                          context) -> common_pb2.NamedEntityUpdateResponse:
        ident = request.id
        validate_named_id(ident.project, ident.domain, ident.name, "UpdateNamedEntity")
        with self.ctx.db.session() as session:
            _require_exists(session, request.resource_type, ident)
            # As FlyteAdmin: the request's metadata replaces the stored one.
            entities.set_named_entity_metadata(session, request.resource_type, ident.project, ident.domain,
                                               ident.name, description=request.metadata.description,
                                               state=request.metadata.state)
        return common_pb2.NamedEntityUpdateResponse()

    def ListNamedEntities(self, request: common_pb2.NamedEntityListRequest,
                          context) -> common_pb2.NamedEntityList:
        validate_named_id(request.project, request.domain, None, "ListNamedEntities")
        model = _model(request.resource_type)
        state = func.coalesce(NamedEntity.state, common_pb2.NAMED_ENTITY_ACTIVE)
        fields = {
            "name": Field(model.name),
            "state": Field(state, enum_value(common_pb2.NamedEntityState)),
            "description": Field(func.coalesce(NamedEntity.description, "")),
        }
        with self.ctx.db.session() as session:
            require_project(session, request.project)
            query = (
                select(model.name)
                .outerjoin(NamedEntity, and_(NamedEntity.resource_type == request.resource_type,
                                             NamedEntity.project == model.project,
                                             NamedEntity.domain == model.domain,
                                             NamedEntity.name == model.name))
                .where(model.project == request.project, model.domain == request.domain)
            )
            if request.resource_type == idpb.WORKFLOW:
                # Generated workflows (.flytegen.*) stay out of sight, as in FlyteAdmin.
                query = query.where(state != common_pb2.SYSTEM_GENERATED)
            query = filters.apply_filters(query, request.filters, fields)
            # One metadata row at most per name, so grouping by it too keeps PostgreSQL happy.
            query = query.group_by(model.name, NamedEntity.state, NamedEntity.description)
            if request.HasField("sort_by") and request.sort_by.key:
                query = filters.apply_sort(query, request.sort_by, fields, default=model.name)
            query = query.order_by(model.name.asc())
            names, token = filters.page(session, query, request.limit, request.token)
            result = common_pb2.NamedEntityList(token=token)
            for name in names:
                meta = entities.named_entity_metadata(session, request.resource_type, request.project,
                                                      request.domain, name)
                result.entities.append(entities.named_entity_to_proto(
                    request.resource_type, request.project, request.domain, name, meta))
            return result
