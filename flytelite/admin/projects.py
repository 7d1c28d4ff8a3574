"""Projects and domains in FlyteAdmin's API.

Domains are fixed for the server (config.DEFAULT_DOMAINS) and every project has
all of them, as in FlyteAdmin, where domains come from configuration.
"""

from __future__ import annotations

import re

from flyteidl.admin import project_pb2
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from flytelite.admin import filters
from flytelite.admin.entity_common import require_project
from flytelite.admin.filters import Field, enum_value, parse_time
from flytelite.config import DEFAULT_DOMAINS
from flytelite.context import CALLER, Context
from flytelite.errors import AlreadyExists, InvalidArgument
from flytelite.store import entities
from flytelite.store.models import Project

# A DNS-1123 label, as FlyteAdmin requires of project ids (they become Kubernetes namespaces there).
_PROJECT_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_ID = 63
MAX_NAME = 64
MAX_DESCRIPTION = 300

PROJECT_FIELDS = {
    "identifier": Field(Project.identifier),
    "id": Field(Project.identifier),
    "name": Field(Project.name),
    "description": Field(Project.description),
    "state": Field(Project.state, enum_value(project_pb2.Project.ProjectState)),
    "created_at": Field(Project.created_at, parse_time),
}


def domains() -> list[project_pb2.Domain]:
    return [project_pb2.Domain(id=d, name=d) for d in DEFAULT_DOMAINS]


def _validate(project: project_pb2.Project) -> None:
    if not project.id:
        raise InvalidArgument("missing project id")
    if len(project.id) > MAX_ID or not _PROJECT_ID.match(project.id):
        raise InvalidArgument(f"invalid project id {project.id!r}: use at most {MAX_ID} lowercase letters, digits "
                              f"and '-', starting and ending with a letter or digit")
    if len(project.name) > MAX_NAME:
        raise InvalidArgument(f"project name is longer than {MAX_NAME} characters")
    if len(project.description) > MAX_DESCRIPTION:
        raise InvalidArgument(f"project description is longer than {MAX_DESCRIPTION} characters")
    unknown = [d.id for d in project.domains if d.id not in DEFAULT_DOMAINS]
    if unknown:
        raise InvalidArgument(f"domains are fixed for this server ({', '.join(DEFAULT_DOMAINS)}); "
                              f"register the project without domains (unknown: {', '.join(unknown)})")


class ProjectsApi:
    ctx: Context

    def RegisterProject(self, request: project_pb2.ProjectRegisterRequest,
                        context) -> project_pb2.ProjectRegisterResponse:
        project = request.project
        _validate(project)
        row = Project(identifier=project.id, name=project.name or project.id, description=project.description,
                      state=project.state,
                      labels_pb=project.labels.SerializeToString() if project.HasField("labels") else None,
                      created_at=self.ctx.clock.now())
        try:
            with self.ctx.db.session() as session:
                if entities.get_project(session, project.id) is not None:
                    raise AlreadyExists(f"project {project.id!r} already exists")
                session.add(row)
        except IntegrityError:
            raise AlreadyExists(f"project {project.id!r} already exists") from None
        return project_pb2.ProjectRegisterResponse()

    def GetProject(self, request: project_pb2.ProjectGetRequest, context) -> project_pb2.Project:
        with self.ctx.db.session() as session:
            return entities.project_to_proto(require_project(session, request.id), domains())

    def UpdateProject(self, request: project_pb2.Project, context) -> project_pb2.ProjectUpdateResponse:
        _validate(request)
        with self.ctx.db.session() as session:
            row = require_project(session, request.id)
            # A full update names the project; an archive/activate that sends only id and state keeps the rest.
            if request.name:
                row.name = request.name
                row.description = request.description
            if request.HasField("labels"):
                row.labels_pb = request.labels.SerializeToString()
            row.state = request.state
        return project_pb2.ProjectUpdateResponse()

    def ListProjects(self, request: project_pb2.ProjectListRequest, context) -> project_pb2.Projects:
        with self.ctx.db.session() as session:
            query = select(Project)
            if request.filters:
                query = filters.apply_filters(query, request.filters, PROJECT_FIELDS)
            else:
                # As FlyteAdmin: without filters, only active projects are listed.
                query = query.where(Project.state == project_pb2.Project.ACTIVE)
            caller = CALLER.get()
            if caller is not None:
                ids = session.scalars(select(Project.identifier)).all()
                query = query.where(Project.identifier.in_([i for i in ids if caller.may_view(i)]))
            if request.HasField("sort_by") and request.sort_by.key:
                query = filters.apply_sort(query, request.sort_by, PROJECT_FIELDS, default=Project.identifier)
            query = query.order_by(Project.identifier.asc())
            rows, token = filters.page(session, query, request.limit, request.token)
            all_domains = domains()
            return project_pb2.Projects(projects=[entities.project_to_proto(r, all_domains) for r in rows],
                                        token=token)

    def GetDomains(self, request: project_pb2.GetDomainRequest, context) -> project_pb2.GetDomainsResponse:
        return project_pb2.GetDomainsResponse(domains=domains())
