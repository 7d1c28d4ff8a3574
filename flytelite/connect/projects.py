"""Flyte 2's ProjectService and IdentityService over Flyte 1's: the same projects (a project registered with
flytekit is one `flyte` lists, and the other way round) and the same answer to who the caller is. flyteidl2's
messages repeat flyteidl's field for field, so each request and answer crosses as its bytes."""

from __future__ import annotations

from connectrpc.request import RequestContext
from flyteidl.admin import project_pb2 as v1
from flyteidl.service import identity_pb2 as v1_identity
from flyteidl2.auth import identity_pb2
from flyteidl2.project import project_service_pb2 as pb
from starlette.concurrency import run_in_threadpool


def _as(message, cls):
    return cls.FromString(message.SerializeToString())


class ProjectService:
    def __init__(self, admin):
        """`admin`: Flyte 1's AdminService servicer (its ProjectsApi)."""
        self.admin = admin

    async def create_project(self, request: pb.CreateProjectRequest, ctx: RequestContext) -> pb.CreateProjectResponse:
        await run_in_threadpool(self.admin.RegisterProject,
                                v1.ProjectRegisterRequest(project=_as(request.project, v1.Project)), None)
        return pb.CreateProjectResponse()

    async def update_project(self, request: pb.UpdateProjectRequest, ctx: RequestContext) -> pb.UpdateProjectResponse:
        await run_in_threadpool(self.admin.UpdateProject, _as(request.project, v1.Project), None)
        return pb.UpdateProjectResponse()

    async def get_project(self, request: pb.GetProjectRequest, ctx: RequestContext) -> pb.GetProjectResponse:
        found = await run_in_threadpool(self.admin.GetProject, v1.ProjectGetRequest(id=request.id, org=request.org),
                                        None)
        return pb.GetProjectResponse(project=_as(found, pb.Project))

    async def list_projects(self, request: pb.ListProjectsRequest, ctx: RequestContext) -> pb.ListProjectsResponse:
        found = await run_in_threadpool(self.admin.ListProjects, _as(request, v1.ProjectListRequest), None)
        return pb.ListProjectsResponse(projects=_as(found, pb.Projects))


class IdentityService:
    def __init__(self, identity):
        """`identity`: Flyte 1's IdentityService servicer."""
        self.identity = identity

    async def user_info(self, request: identity_pb2.UserInfoRequest,
                        ctx: RequestContext) -> identity_pb2.UserInfoResponse:
        found = await run_in_threadpool(self.identity.UserInfo, v1_identity.UserInfoRequest(), _Metadata(ctx))
        return _as(found, identity_pb2.UserInfoResponse)


class _Metadata:
    """A connect request's headers as a gRPC servicer reads its call's metadata."""

    def __init__(self, ctx: RequestContext):
        self._headers = ctx.request_headers()

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return list(self._headers.items())
