"""IdentityService.UserInfo (`GET /me`): who the caller's access token speaks for, as FlyteAdmin answers it from
its identity context; without authentication, FlyteAdmin's anonymous answer (an empty UserInfoResponse)."""

from __future__ import annotations

from flyteidl.service import identity_pb2, identity_pb2_grpc
from google.protobuf import struct_pb2

from flytelite.admin.grpc_errors import fill_unimplemented
from flytelite.context import Context
from flytelite.errors import Unauthenticated


class IdentityService(identity_pb2_grpc.IdentityServiceServicer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def UserInfo(self, request: identity_pb2.UserInfoRequest, context) -> identity_pb2.UserInfoResponse:
        auth = self.ctx.auth
        if auth is None:
            return identity_pb2.UserInfoResponse()
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() if context is not None else ())
                    if isinstance(v, str)}
        token = auth.token_in(metadata)
        if not token:
            raise Unauthenticated("UserInfo needs the caller's bearer token")
        identity = auth.tokens.identity(token)
        claims = struct_pb2.Struct()
        claims.update({"client_id": identity.client_id, "scopes": list(identity.scopes)})
        return identity_pb2.UserInfoResponse(subject=identity.subject, preferred_username=identity.subject,
                                             name=identity.subject, additional_claims=claims)


fill_unimplemented(IdentityService, identity_pb2_grpc.IdentityServiceServicer)
