"""Turn every exception into a gRPC status a client can act on; never UNKNOWN.

A database or blob store that cannot be reached answers UNAVAILABLE, a full disk RESOURCE_EXHAUSTED
(errors.as_outage), naming the dependency: FlyteAdmin's clients try UNAVAILABLE again.

flytekit answers UNKNOWN (and UNAUTHENTICATED) by starting a browser login,
so an unexpected failure must surface as INTERNAL with its message. A client's
own mistakes never do: the request's bytes are parsed here rather than by grpc
(whose failure is a bare `INTERNAL: Exception deserializing request!`), so bytes
that do not parse, or nest deeper than protobuf's parser allows, are
INVALID_ARGUMENT. Every message is fit for the client's metadata limit
(errors.client_message) before it leaves.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf.message import DecodeError

from flytelite.errors import FlyteliteError, InvalidArgument, Unimplemented, as_outage, client_message

log = logging.getLogger(__name__)


def _parse(deserialize, method: str):
    """The request message from its bytes; InvalidArgument when they do not parse."""
    def parse(data: bytes):
        try:
            return deserialize(data)
        except (DecodeError, RecursionError) as exc:
            reason = ("it nests messages deeper than protobuf's parser allows (100 levels; a literal collection "
                      "or map inside another counts two)" if "Depth" in str(exc) or isinstance(exc, RecursionError)
                      else "its bytes are not a valid protobuf encoding")
            raise InvalidArgument(f"{method}: the request does not parse: {reason} ({exc})") from None
    return parse


def _wrap(behavior, method: str, deserialize):
    parse = _parse(deserialize, method) if deserialize is not None else (lambda data: data)

    def handler(request, context: grpc.ServicerContext):
        try:
            return behavior(parse(request), context)
        except FlyteliteError as exc:
            context.abort(getattr(grpc.StatusCode, exc.grpc_code), client_message(str(exc)))
        except NotImplementedError as exc:
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          client_message(f"{method} is not implemented by flytelite yet. {exc}"))
        except Exception as exc:  # noqa: BLE001 - the boundary: report, never crash, never UNKNOWN
            if context.code() not in (None, grpc.StatusCode.OK):  # type: ignore[attr-defined]  # code() (grpc 1.38+) is not in types-grpcio
                raise  # the handler called context.abort itself; its status stands
            outage = as_outage(exc)
            if outage is not None:
                log.warning("%s failed: %s", method, outage)
                context.abort(getattr(grpc.StatusCode, outage.grpc_code), client_message(f"{method}: {outage}"))
            log.exception("%s failed", method)
            context.abort(grpc.StatusCode.INTERNAL,
                          client_message(f"{method} failed inside flytelite: {type(exc).__name__}: {exc}"))

    return handler


class ErrorInterceptor(grpc.ServerInterceptor):
    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        # grpc hands the handler the raw bytes; _wrap parses them, inside the error boundary.
        return handler._replace(unary_unary=_wrap(handler.unary_unary, handler_call_details.method,
                                                  handler.request_deserializer),
                                request_deserializer=None)


def unimplemented(method: str):
    """A servicer method that answers UNIMPLEMENTED naming the RPC."""

    def rpc(self, request, context):
        raise Unimplemented(f"{method} is not implemented by flytelite yet")

    rpc.__name__ = method
    return rpc


def fill_unimplemented(servicer_cls: type, base: type) -> type:
    """Replace every RPC the servicer does not define with one that names itself in its message."""
    for name in dir(base):
        if name.startswith("_") or not callable(getattr(base, name)):
            continue
        if getattr(servicer_cls, name) is getattr(base, name):
            setattr(servicer_cls, name, unimplemented(name))
    return servicer_cls
