"""Flyte 2's API (connect/) with authentication on: AuthMetadataService (where the `flyte` SDK learns the token
endpoint, open to anyone), and the Guard every other call passes.

The Guard does for connect calls what flytelite's gRPC interceptors do for Flyte 1's (auth/grpc.py,
admin/audit.py): a call needs a valid bearer token (UNAUTHENTICATED otherwise), the caller's roles must give it
the permission its RPC needs in the project and domain its request names (auth/roles.py; PERMISSION_DENIED
otherwise), it is served as that caller (CALLER: ListProjects lists what it may view, a run records its
creator), and the calls that change something are recorded in the audit trail, refused ones too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any

from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from flyteidl2.auth import auth_service_pb2
from flyteidl2.common import identifier_pb2
from flyteidl2.project import project_service_pb2
from google.protobuf.message import Message
from starlette.concurrency import run_in_threadpool

from flytelite.admin.audit import AuditLog, describe
from flytelite.admin.audit import Caller as AuditCaller
from flytelite.auth.http import ACCESS_COOKIE
from flytelite.auth.roles import Caller, rpc_permission
from flytelite.auth.setup import Auth
from flytelite.auth.tokens import Identity
from flytelite.context import CALLER
from flytelite.errors import FlyteliteError, Unauthenticated

OPEN_SERVICE = "flyteidl2.auth.AuthMetadataService"
# The Flyte 2 calls that change something (Flyte 1's are admin/audit.py's AUDITED).
AUDITED = frozenset({"CreateRun", "AbortRun", "AbortAction", "SignalEvent", "CreateProject", "UpdateProject"})


class AuthMetadataService:
    def __init__(self, auth: Auth):
        self.auth = auth

    async def get_o_auth2_metadata(self, request: auth_service_pb2.GetOAuth2MetadataRequest,
                                   ctx: RequestContext) -> auth_service_pb2.GetOAuth2MetadataResponse:
        return auth_service_pb2.GetOAuth2MetadataResponse(**self.auth.server.metadata())

    async def get_public_client_config(self, request: auth_service_pb2.GetPublicClientConfigRequest,
                                       ctx: RequestContext) -> auth_service_pb2.GetPublicClientConfigResponse:
        return auth_service_pb2.GetPublicClientConfigResponse(**self.auth.server.public_client_config())


class Guard:
    def __init__(self, auth: Auth, audit: AuditLog):
        self.auth, self.audit = auth, audit

    async def intercept_unary(self, call_next: Callable[[Any, RequestContext], Awaitable[Any]], request,
                              ctx: RequestContext):
        if ctx.method().service_name == OPEN_SERVICE:
            return await call_next(request, ctx)
        rpc = ctx.method().name
        outcome, message, identity, response = "OK", "", None, None
        try:
            identity = self._identify(ctx)
            self._require(identity, request, ctx)
            token = CALLER.set(Caller(identity, self.auth.authorizer))
            try:
                response = await call_next(request, ctx)
                return response
            finally:
                CALLER.reset(token)
        except Exception as exc:
            outcome, message = _outcome(exc)
            raise
        finally:
            if rpc in AUDITED:
                who = AuditCaller(identity.subject if identity else "", identity.client_id if identity else "",
                                  ctx.client_address() or "")
                named = target(request)
                if not named[2] and response is not None:  # a run the server named (CreateRun's project_id)
                    named = target(response)
                await run_in_threadpool(self.audit.record, rpc, named, who, outcome, message)

    async def intercept_server_stream(self, call_next: Callable[[Any, RequestContext], AsyncIterator[Any]],
                                      request, ctx: RequestContext) -> AsyncIterator[Any]:
        self._require(self._identify(ctx), request, ctx)
        async for response in call_next(request, ctx):
            yield response

    def _identify(self, ctx: RequestContext) -> Identity:
        """Who the call's token speaks for (Unauthenticated without a valid one): a bearer token, else the
        console's sign-in cookie (the console's pages call the API from the browser)."""
        headers = {k.lower(): v for k, v in ctx.request_headers().items()}
        cookie = SimpleCookie(headers.get("cookie", "")).get(ACCESS_COOKIE)
        token = self.auth.token_in(headers) or (cookie.value if cookie is not None else "")
        if not token:
            raise Unauthenticated(f"{ctx.method().name} needs a bearer token in the '{self.auth.config.header_key}' "
                                  "header: sign in with the flyte SDK (flyte.init with an auth_type, over TLS)")
        return self.auth.tokens.identity(token)

    def _require(self, identity: Identity, request: Message, ctx: RequestContext) -> None:
        """PermissionDenied unless the caller's roles give it what the RPC needs where its request names."""
        needs = rpc_permission(ctx.method().name)
        if needs is not None:
            project, domain, _ = target(request)
            self.auth.authorizer.require(identity, needs, project, domain)


def target(request: Message) -> tuple[str, str, str]:
    """(project, domain, resource) a Flyte 2 request names: a project's id, a project identifier (name and
    domain), else what names a run (admin/audit.py's describe)."""
    if isinstance(request, project_service_pb2.GetProjectRequest):
        return request.id, "", request.id
    project = getattr(request, "project", None)
    if isinstance(project, project_service_pb2.Project):
        return project.id, "", project.id
    queue = [request]
    while queue:
        current = queue.pop(0)
        if isinstance(current, identifier_pb2.ProjectIdentifier):
            return current.name, current.domain, ""
        queue += [value for _, value in current.ListFields() if isinstance(value, Message)]
    return describe(request)


def _outcome(exc: Exception) -> tuple[str, str]:
    if isinstance(exc, FlyteliteError):
        return exc.grpc_code, str(exc)
    if isinstance(exc, ConnectError):
        return exc.code.name, exc.message
    return "INTERNAL", str(exc)


def connect_auth(auth: Auth, audit: AuditLog) -> tuple[dict[str, object], list[object]]:
    """What connect/app.py's routes serve with authentication on: its services by full name, and its guards."""
    return {OPEN_SERVICE: AuthMetadataService(auth)}, [Guard(auth, audit)]
