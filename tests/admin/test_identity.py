"""IdentityService.UserInfo without authentication: FlyteAdmin's anonymous answer, an empty UserInfoResponse,
over gRPC and at GET /me."""

from __future__ import annotations

import grpc
import pytest
import requests
from flyteidl.service import identity_pb2, identity_pb2_grpc

pytestmark = pytest.mark.e2e


def test_user_info_is_anonymous_without_authentication(server):
    with grpc.insecure_channel(server.endpoint) as channel:
        info = identity_pb2_grpc.IdentityServiceStub(channel).UserInfo(identity_pb2.UserInfoRequest(), timeout=30)
    assert info == identity_pb2.UserInfoResponse()
    me = requests.get(f"{server.url}/me", timeout=30)
    assert me.status_code == 200 and me.json()["subject"] == ""
