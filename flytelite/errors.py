"""The small error hierarchy shared by every layer.

Each error maps to one gRPC status code (and one HTTP status) at the API edge,
so a layer raises the error that says what went wrong and never picks codes.
"""

from __future__ import annotations


class FlyteliteError(Exception):
    """Base class: the message says what happened, to which entity, and what to do."""

    grpc_code = "INTERNAL"
    http_status = 500


class InvalidArgument(FlyteliteError):
    grpc_code = "INVALID_ARGUMENT"
    http_status = 400


class NotFound(FlyteliteError):
    grpc_code = "NOT_FOUND"
    http_status = 404


class AlreadyExists(FlyteliteError):
    grpc_code = "ALREADY_EXISTS"
    http_status = 409


class FailedPrecondition(FlyteliteError):
    grpc_code = "FAILED_PRECONDITION"
    http_status = 412


class Unimplemented(FlyteliteError):
    grpc_code = "UNIMPLEMENTED"
    http_status = 501


class Unauthenticated(FlyteliteError):
    """No credentials, or credentials this server does not accept (expired, forged, wrong kind)."""

    grpc_code = "UNAUTHENTICATED"
    http_status = 401
