"""gRPC side of authentication: AuthMetadataService and the interceptor that checks every other call.

Follows FlyteAdmin's auth/handlers.go (GetAuthenticationInterceptor: read the bearer token from the
configured metadata key, falling back to "authorization"; answer UNAUTHENTICATED otherwise) and
BlanketAuthorization (the "all" scope). AuthMetadataService and health checks stay open, as FlyteAdmin's
anonymously accessible discovery endpoints do.
"""

from __future__ import annotations

import grpc
from flyteidl.service import auth_pb2, auth_pb2_grpc

from flytelite.auth.roles import request_target, rpc_permission, serve_as
from flytelite.auth.setup import Auth
from flytelite.errors import Unauthenticated

OPEN_SERVICES = ("/flyteidl.service.AuthMetadataService/", "/grpc.health.v1.Health/")


class AuthMetadataService(auth_pb2_grpc.AuthMetadataServiceServicer):
    """FlyteAdmin's AuthMetadataService: where flytekit learns the token endpoint and the public client."""

    def __init__(self, auth: Auth):
        self.auth = auth

    def GetOAuth2Metadata(self, request, context):
        return auth_pb2.OAuth2MetadataResponse(**self.auth.server.metadata())

    def GetPublicClientConfig(self, request, context):
        return auth_pb2.PublicClientAuthConfigResponse(**self.auth.server.public_client_config())


def _refuse(message: str):
    def handler(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return handler


class AuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, auth: Auth):
        self.auth = auth
        self.keys = (auth.config.header_key.lower(), "authorization")

    def intercept_service(self, continuation, handler_call_details):
        method = handler_call_details.method
        if method.startswith(OPEN_SERVICES):
            return continuation(handler_call_details)
        metadata = {k.lower(): v for k, v in (handler_call_details.invocation_metadata or ()) if isinstance(v, str)}
        token = self.auth.token_in(metadata)
        try:
            if not token:
                raise Unauthenticated(f"{method.rsplit('/', 1)[-1]} needs a bearer token in the "
                                      f"'{self.keys[0]}' metadata; configure flytekit's admin.authType "
                                      f"(ClientSecret, Pkce or ExternalCommand)")
            self.auth.tokens.identity(token)
        except Unauthenticated as exc:
            handler = continuation(handler_call_details)
            if handler is None:
                return None
            # Keep the RPC's own kind (unary or streaming) so the client reads a status, not a protocol error.
            refuse = _refuse(str(exc))
            return handler._replace(**{kind: refuse for kind in ("unary_unary", "unary_stream", "stream_unary",
                                                                 "stream_stream") if getattr(handler, kind)})
        return continuation(handler_call_details)


class AuthorizationInterceptor(grpc.ServerInterceptor):
    """Checks each call against the caller's roles (auth/roles.py) and serves it as that caller (CALLER).

    Inside the error boundary, so requests arrive parsed and a refusal is answered PERMISSION_DENIED.
    """

    def __init__(self, auth: Auth):
        self.auth = auth

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or handler.unary_unary is None or method.startswith(OPEN_SERVICES):
            return handler
        needs = rpc_permission(method.rsplit("/", 1)[-1])
        metadata = {k.lower(): v for k, v in (handler_call_details.invocation_metadata or ()) if isinstance(v, str)}
        identity = self.auth.identity_in(metadata)
        authorizer, behavior = self.auth.authorizer, handler.unary_unary

        def authorized(request, context):
            return serve_as(authorizer, identity, needs, request_target(request), lambda: behavior(request, context))

        return handler._replace(unary_unary=authorized)
