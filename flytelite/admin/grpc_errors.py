"""Turn every exception into a gRPC status a client can act on; never UNKNOWN.

flytekit answers UNKNOWN (and UNAUTHENTICATED) by starting a browser login,
so an unexpected failure must surface as INTERNAL with its message.
"""

from __future__ import annotations

import logging

import grpc

from flytelite.errors import FlyteliteError, Unimplemented

log = logging.getLogger(__name__)


def _wrap(behavior, method: str):
    def handler(request, context: grpc.ServicerContext):
        try:
            return behavior(request, context)
        except FlyteliteError as exc:
            context.abort(getattr(grpc.StatusCode, exc.grpc_code), str(exc))
        except NotImplementedError as exc:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not implemented by flytelite yet. {exc}")
        except Exception as exc:  # noqa: BLE001 - the boundary: report, never crash, never UNKNOWN
            if context.code() not in (None, grpc.StatusCode.OK):
                raise  # the handler called context.abort itself; its status stands
            log.exception("%s failed", method)
            context.abort(grpc.StatusCode.INTERNAL, f"{method} failed inside flytelite: {type(exc).__name__}: {exc}")

    return handler


class ErrorInterceptor(grpc.ServerInterceptor):
    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        return handler._replace(unary_unary=_wrap(handler.unary_unary, handler_call_details.method))


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
