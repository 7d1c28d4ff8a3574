"""IdentityService.UserInfo (`GET /me`): who the caller's access token speaks for, as FlyteAdmin answers it from
its identity context; without authentication, FlyteAdmin's anonymous answer (an empty UserInfoResponse)."""

from __future__ import annotations

from flyteidl.service import identity_pb2, identity_pb2_grpc
from google.protobuf import struct_pb2

from flytelite.admin.grpc_errors import fill_unimplemented
from flytelite.context import CALLER, Context
from flytelite.errors import Unauthenticated


class IdentityService(identity_pb2_grpc.IdentityServiceServicer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def UserInfo(self, request: identity_pb2.UserInfoRequest, context) -> identity_pb2.UserInfoResponse:
        auth = self.ctx.auth
        if auth is None:
            return identity_pb2.UserInfoResponse()
        # The guard in front of every call signed the caller in (a bearer token, or the console's cookie).
        caller = CALLER.get()
        if caller is None:
            raise Unauthenticated("UserInfo needs the caller's bearer token")
        claims = struct_pb2.Struct()
        claims.update({"client_id": caller.client_id, "scopes": list(caller.scopes)})
        return identity_pb2.UserInfoResponse(subject=caller.name, preferred_username=caller.name, name=caller.name,
                                             additional_claims=claims)


fill_unimplemented(IdentityService, identity_pb2_grpc.IdentityServiceServicer)
