"""What registering and listing tasks, workflows and launch plans have in common.

Identifier and project/domain validation, the write-once rule for entity
versions (identical re-registration succeeds, different content is refused),
and FlyteAdmin's list requests over the entity tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from flyteidl.admin import common_pb2
from flyteidl.core import identifier_pb2 as idpb
from google.protobuf.message import Message
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from flytelite.admin import filters
from flytelite.admin.filters import Field, parse_time
from flytelite.config import DEFAULT_DOMAINS
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.enums import enum_name
from flytelite.idl.ids import RESOURCE_NAMES, describe
from flytelite.store import entities
from flytelite.store.entities import EntityModel
from flytelite.store.models import Project

MAX_NAME = 255
_PROJECT_ARCHIVED = 1  # flyteidl.admin.Project.ProjectState.ARCHIVED


def kind_name(resource_type: int) -> str:
    return RESOURCE_NAMES.get(resource_type, "entity")


# -- validation -------------------------------------------------------------------------------------
def validate_domain(domain: str) -> None:
    if not domain:
        raise InvalidArgument(f"missing domain; use one of: {', '.join(DEFAULT_DOMAINS)}")
    if domain not in DEFAULT_DOMAINS:
        raise InvalidArgument(f"domain {domain!r} is not a domain of this server; use one of: "
                              f"{', '.join(DEFAULT_DOMAINS)}")


def require_project(session: Session, project: str) -> Project:
    if not project:
        raise InvalidArgument("missing project; name the project to use, e.g. flytesnacks")
    row = entities.get_project(session, project)
    if row is None:
        known = ", ".join(entities.project_ids(session)) or "(none)"
        raise NotFound(f"project {project!r} does not exist; existing projects: {known}. "
                       f"Create it first (flytectl create project --id {project} --name {project}).")
    return row


def validate_project_domain(session: Session, project: str, domain: str, for_write: bool = False) -> None:
    """The project must exist (and, to register into it, not be archived); the domain must be known."""
    row = require_project(session, project)
    validate_domain(domain)
    if for_write and row.state == _PROJECT_ARCHIVED:
        raise InvalidArgument(f"project {project!r} is archived; unarchive it (UpdateProject with state ACTIVE) "
                              f"before registering into it")


def validate_identifier(ident: idpb.Identifier, resource_type: int, has_field: bool = True) -> None:
    """Every part of a versioned id must be set; a resource type, when given, must be the expected one."""
    kind = kind_name(resource_type)
    if not has_field:
        raise InvalidArgument(f"missing {kind} identifier (project, domain, name, version)")
    if ident.resource_type not in (idpb.UNSPECIFIED, resource_type):
        raise InvalidArgument(f"identifier {describe(ident)} has resource type "
                              f"{enum_name(idpb.ResourceType, ident.resource_type)}, expected "
                              f"{enum_name(idpb.ResourceType, resource_type)}")
    missing = [part for part in ("project", "domain", "name", "version") if not getattr(ident, part)]
    if missing:
        raise InvalidArgument(f"{kind} identifier is missing its {', '.join(missing)} "
                              f"(got project={ident.project!r} domain={ident.domain!r} "
                              f"name={ident.name!r} version={ident.version!r})")
    for part in ("project", "domain", "name", "version"):
        if len(getattr(ident, part)) > MAX_NAME:
            raise InvalidArgument(f"{kind} {part} is longer than {MAX_NAME} characters")


def validate_length(what: str, value: str, limit: int = MAX_NAME) -> None:
    """Refuse text longer than its column holds: PostgreSQL would refuse it, SQLite would not (same answer on both)."""
    if len(value) > limit:
        raise InvalidArgument(f"{what} {value[:40]!r}... is {len(value)} characters long; at most {limit} are allowed")


def validate_named_id(project: str, domain: str, name: str | None, what: str) -> None:
    missing = [k for k, v in (("project", project), ("domain", domain)) if not v]
    if name is not None and not name:
        missing.append("name")
    if missing:
        raise InvalidArgument(f"{what} needs {', '.join(missing)}")
    validate_domain(domain)


def not_found(session: Session, ident: idpb.Identifier) -> NotFound:
    """NotFound for a versioned id, saying whether other versions of the name exist."""
    model = entities.MODEL_FOR_RESOURCE[ident.resource_type]
    if entities.entity_exists(session, model, ident.project, ident.domain, ident.name):
        return NotFound(f"{describe(ident)} does not exist (other versions of it do); check the version")
    return NotFound(f"{describe(ident)} does not exist; register it first")


def typed_id(ident: idpb.Identifier, resource_type: idpb.ResourceType) -> idpb.Identifier:
    """A copy of the id with its resource type set (clients sometimes leave it unset)."""
    out = idpb.Identifier()
    out.CopyFrom(ident)
    out.resource_type = resource_type
    return out


# -- write once -------------------------------------------------------------------------------------
def digest(*messages: Message) -> str:
    """A stable digest of messages (deterministic serialization sorts map entries)."""
    h = hashlib.sha256()
    for msg in messages:
        data = msg.SerializeToString(deterministic=True)
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def _check_same(existing, ident: idpb.Identifier, new_digest: str,
                redigest: Callable[[object], str] | None) -> None:
    # A row stored before its kind's digest became canonical still holds the older digest: recompute
    # it from the stored spec before calling the content different.
    if existing.digest == new_digest or (redigest is not None and redigest(existing) == new_digest):
        return
    # INVALID_ARGUMENT, as FlyteAdmin answers: flytekit treats ALREADY_EXISTS as "identical, fine" and
    # would silently keep the old definition, so the user must see this one.
    raise InvalidArgument(
        f"{describe(ident)} already exists with different content; versions are immutable. "
        f"Register the changed {kind_name(ident.resource_type)} under a new version."
    )


def insert_once(ctx: Context, model: EntityModel, ident: idpb.Identifier, new_digest: str,
                build_row: Callable[[], object], redigest: Callable[[Any], str] | None = None) -> bool:
    """Insert a new entity version, or accept an identical one; True when a row was written.

    ``redigest`` computes the digest of an existing row from its stored spec, for rows written while
    the digest of their kind was computed differently.

    Concurrent identical registrations (flytekit registers tasks in parallel) race
    on the primary key: the loser re-reads and compares digests like everyone else.
    """
    with ctx.db.session() as session:
        existing = entities.entity_row(session, model, ident)
        if existing is not None:
            _check_same(existing, ident, new_digest, redigest)
            return False
    try:
        with ctx.db.session() as session:
            session.add(build_row())
        return True
    except IntegrityError:
        with ctx.db.session() as session:
            existing = entities.entity_row(session, model, ident)
            if existing is None:
                raise
            _check_same(existing, ident, new_digest, redigest)
            return False


# -- lists ----------------------------------------------------------------------------------------------
def entity_fields(model: EntityModel, **extra: Field) -> dict[str, Field]:
    fields = {
        "project": Field(model.project),
        "domain": Field(model.domain),
        "name": Field(model.name),
        "version": Field(model.version),
        "created_at": Field(model.created_at, parse_time),
    }
    fields.update(extra)
    return fields


def list_entities(ctx: Context, model: EntityModel, request: common_pb2.ResourceListRequest,
                  fields: dict[str, Field]) -> tuple[list, str]:
    """Versions of entities in a project/domain (of one name when the request names one), as protos."""
    ident = request.id
    validate_named_id(ident.project, ident.domain, None, f"listing {model.__tablename__}")
    to_proto = entities.TO_PROTO[model]
    with ctx.db.session() as session:
        require_project(session, ident.project)
        query = select(model).where(model.project == ident.project, model.domain == ident.domain)
        if ident.name:
            query = query.where(model.name == ident.name)
        query = filters.apply_filters(query, request.filters, fields)
        query = filters.apply_sort(query, _sort(request), fields, default=model.created_at)
        # A stable tie-break keeps pages from overlapping when sort values are equal.
        query = query.order_by(model.name, model.version)
        rows, token = filters.page(session, query, request.limit, request.token)
        return [to_proto(row) for row in rows], token


def list_entity_ids(ctx: Context, model: EntityModel, request: common_pb2.NamedEntityIdentifierListRequest,
                    fields: dict[str, Field]) -> common_pb2.NamedEntityIdentifierList:
    """Distinct names of entities in a project/domain, one page of them, sorted by name unless asked."""
    project, domain = request.project, request.domain
    validate_named_id(project, domain, None, f"listing {model.__tablename__} names")
    name_fields = dict(fields)
    # Per name, "created_at" means the newest version's.
    name_fields["created_at"] = Field(func.max(model.created_at), parse_time)
    with ctx.db.session() as session:
        require_project(session, project)
        query = select(model.name).where(model.project == project, model.domain == domain)
        query = filters.apply_filters(query, getattr(request, "filters", ""), fields)
        query = query.group_by(model.name)
        sort_by = _sort(request)
        if sort_by is None:
            query = query.order_by(model.name.asc())
        else:
            query = filters.apply_sort(query, sort_by, name_fields, default=model.name).order_by(model.name)
        names, token = filters.page(session, query, request.limit, request.token)
    return common_pb2.NamedEntityIdentifierList(
        entities=[common_pb2.NamedEntityIdentifier(project=project, domain=domain, name=n) for n in names],
        token=token)


def _sort(request) -> common_pb2.Sort | None:
    return request.sort_by if request.HasField("sort_by") and request.sort_by.key else None
