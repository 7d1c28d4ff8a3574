"""The small error hierarchy shared by every layer.

Each error maps to one gRPC status code (and one HTTP status) at the API edge,
so a layer raises the error that says what went wrong and never picks codes.
"""

from __future__ import annotations

import errno
import re

from sqlalchemy import exc as sql


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


class ConcurrencyLimitReached(AlreadyExists):
    """A launch plan's concurrency policy refused an execution (FlyteAdmin answers ALREADY_EXISTS)."""


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


class PermissionDenied(FlyteliteError):
    """A caller known to the server whose roles do not allow what it asked."""

    grpc_code = "PERMISSION_DENIED"
    http_status = 403


class Unavailable(FlyteliteError):
    """A dependency (the database, the blob store) cannot be reached now: the client may try again."""

    grpc_code = "UNAVAILABLE"
    http_status = 503


class ResourceExhausted(FlyteliteError):
    """A dependency has no room left (a full disk)."""

    grpc_code = "RESOURCE_EXHAUSTED"
    http_status = 507


def _chain(exc: BaseException):
    """The exception and those it wraps (causes, contexts, a database error's DBAPI original)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__, getattr(e, "orig", None)]


def _blob_store_unreachable(e: BaseException) -> bool:
    try:
        from botocore import exceptions as boto
    except ImportError:  # pragma: no cover - botocore comes with s3fs
        return False
    return isinstance(e, (boto.ConnectionError, boto.HTTPClientError))


def as_outage(exc: BaseException) -> FlyteliteError | None:
    """What a failure caused by a dependency is, to the client: RESOURCE_EXHAUSTED for a full disk, UNAVAILABLE
    for a database or blob store that cannot be reached (or is too busy to answer), each naming it; None for
    any other failure."""
    chain = list(_chain(exc))
    cause = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    for e in chain:
        full = isinstance(e, OSError) and e.errno == errno.ENOSPC
        if full or "database or disk is full" in str(e) or "No space left on device" in str(e):
            where = "the database's disk" if isinstance(exc, sql.DBAPIError) else "a disk flytelite writes to"
            filename = getattr(e, "filename", None)
            return ResourceExhausted(f"{where}{f' ({filename})' if filename else ''} is full ({cause}); "
                                     "free some space and try again")
    for e in chain:
        if isinstance(e, (sql.OperationalError, sql.InterfaceError, sql.TimeoutError)) or (
                isinstance(e, sql.DBAPIError) and e.connection_invalidated):
            return Unavailable(f"the database cannot be reached or is too busy ({cause}); try again shortly")
        if _blob_store_unreachable(e):
            return Unavailable(f"the blob store cannot be reached ({cause}); try again shortly")
    return None


# What an error message may carry to a client. A value a client sent can be huge (a 1 MB name); echoed whole,
# the gRPC status message overflows the client's metadata limit (8 KiB soft, 16 KiB hard) and the client sees
# RESOURCE_EXHAUSTED instead of the real error. So any long run of text is elided in the middle, and the whole
# message is capped in the bytes it takes once percent-encoded in the grpc-message trailer.
MAX_VALUE_CHARS = 200
MAX_MESSAGE_BYTES = 6000
_LONG_RUN = re.compile(rf"\S{{{MAX_VALUE_CHARS + 1},}}")


def _elide(text: str) -> str:
    return f"{text[:120]}…[{len(text) - 160} more characters]…{text[-40:]}"


def _encoded_size(char: str) -> int:
    """Bytes one character takes in grpc-message: printable ASCII as is, everything else %XX per UTF-8 byte."""
    return 1 if " " <= char <= "~" and char != "%" else 3 * len(char.encode("utf-8", "surrogatepass"))


def client_message(text: str) -> str:
    """`text` fit to travel in an error reply: long values elided, the whole capped at MAX_MESSAGE_BYTES."""
    text = _LONG_RUN.sub(lambda m: _elide(m.group()), text)
    budget = MAX_MESSAGE_BYTES - 40
    for i, char in enumerate(text):
        budget -= _encoded_size(char)
        if budget < 0:
            return f"{text[:i]}…[message cut, {len(text) - i} more characters]"
    return text
