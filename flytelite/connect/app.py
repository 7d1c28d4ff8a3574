"""Flyte 2's API: flyteidl2's connect-rpc services, served by the HTTP app on the public port beside FlyteAdmin's
gRPC services (the port's mux sends HTTP/2 gRPC to grpcio and everything else, connect's HTTP/1.1 among it, to
the HTTP app).

Every flyteidl2 service is mounted at its path, so that an RPC flytelite does not serve answers UNIMPLEMENTED
naming itself, never a 404 or a hang. Failures are answered as FlyteAdmin's gRPC ones are (admin/grpc_errors.py):
a flytelite error with its code, an outage of the database or blob store UNAVAILABLE (a full disk
RESOURCE_EXHAUSTED) naming it, anything else INTERNAL with its message, never UNKNOWN.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from functools import cache
from typing import Any

from connectrpc.code import Code
from connectrpc.codec import Codec, proto_binary_codec, proto_json_codec
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication
from google.protobuf.json_format import ParseError
from google.protobuf.message import DecodeError
from starlette.routing import Mount

from flytelite.context import Context
from flytelite.errors import FlyteliteError, Unimplemented, as_outage, client_message

log = logging.getLogger(__name__)


@cache
def service_applications() -> tuple[Any, ...]:
    """The ASGI application class of every service flyteidl2 defines (its generated `*_connect` modules)."""
    import flyteidl2

    found = []
    for module_info in pkgutil.walk_packages(flyteidl2.__path__, "flyteidl2."):
        if not module_info.name.endswith("_connect"):
            continue
        module = importlib.import_module(module_info.name)
        found += [cls for cls in vars(module).values()
                  if inspect.isclass(cls) and issubclass(cls, ConnectASGIApplication)
                  and cls.__module__ == module.__name__]
    return tuple(found)


def routes(ctx: Context, v1_servicers: Mapping[str, object], served: Mapping[str, object] | None = None,
           guards: Sequence[object] = ()) -> list[Mount]:
    """The routes of Flyte 2's API over `ctx` (`v1_servicers`: Flyte 1's gRPC servicers by service name, whose
    uploads, projects and identities Flyte 2's are), with authentication's services (`served`, by full name)
    and interceptors (`guards`) when it is on (auth/connect.py)."""
    from flytelite.connect.dataproxy import ClusterService, DataProxyService
    from flytelite.connect.projects import IdentityService, ProjectService
    from flytelite.connect.runs import ActionsService, RunService

    implementations = {
        "flyteidl2.cluster.ClusterService": ClusterService(),
        "flyteidl2.dataproxy.DataProxyService": DataProxyService(ctx, v1_servicers["DataProxyService"]),
        "flyteidl2.workflow.RunService": RunService(ctx),
        "flyteidl2.actions.ActionsService": ActionsService(ctx),
        "flyteidl2.project.ProjectService": ProjectService(v1_servicers["AdminService"]),
        "flyteidl2.auth.IdentityService": IdentityService(v1_servicers["IdentityService"]),
        **(served or {}),
    }
    return connect_routes(implementations, guards)


def connect_routes(implementations: Mapping[str, object], guards: Sequence[object] = ()) -> list[Mount]:
    """A route per flyteidl2 service, at its path (`/flyteidl2.workflow.RunService`): served by the object
    `implementations` has for its full name (`flyteidl2.workflow.RunService`), whose missing methods answer
    UNIMPLEMENTED, as do all of a service it has none for. `guards`: interceptors inside the error boundary
    (authentication's)."""
    routes = []
    for application in service_applications():
        probe = application(_Served(None))
        service = probe.path.strip("/")
        served = _Served(implementations.get(service))
        app = application(served, interceptors=[ErrorBoundary(), *guards])
        # The generated applications do not pass the base class's `codecs` on: set as its constructor would.
        app._codecs = {codec.name(): codec for codec in _STRICT_CODECS}
        routes.append(Mount(probe.path, app=app))
    return routes


class _StrictCodec:
    """A codec whose failure to read a request is the client's mistake (INVALID_ARGUMENT), not UNKNOWN."""

    def __init__(self, codec: Codec):
        self._codec = codec

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message) -> bytes:
        return self._codec.encode(message)

    def decode(self, data, message):
        try:
            return self._codec.decode(data, message)
        except (DecodeError, ParseError, RecursionError) as exc:
            raise ConnectError(Code.INVALID_ARGUMENT, client_message(
                f"the request is not a {message.DESCRIPTOR.full_name} in {self.name()}: {exc}")) from None


_STRICT_CODECS = (_StrictCodec(proto_binary_codec()), _StrictCodec(proto_json_codec()))


class _Served:
    """A service's implementation, whose missing methods answer UNIMPLEMENTED (the generated applications look
    every method of their service up when they first serve)."""

    def __init__(self, implementation: object | None):
        self._implementation = implementation

    def __getattr__(self, name: str) -> Callable[..., Any]:
        found = getattr(self._implementation, name, None) if self._implementation is not None else None
        return found if found is not None else _unimplemented


def _unimplemented(request, ctx: RequestContext):
    raise Unimplemented("")


class ErrorBoundary:
    """Maps what an RPC raises to the connect error a client can act on (see the module's docstring)."""

    async def intercept_unary(self, call_next: Callable[[Any, RequestContext], Awaitable[Any]], request,
                              ctx: RequestContext):
        try:
            return await call_next(request, ctx)
        except ConnectError:
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: report, never UNKNOWN
            raise self._error(exc, ctx) from None

    async def intercept_server_stream(self, call_next: Callable[[Any, RequestContext], AsyncIterator[Any]],
                                      request, ctx: RequestContext) -> AsyncIterator[Any]:
        try:
            async for response in call_next(request, ctx):
                yield response
        except ConnectError:
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: report, never UNKNOWN
            raise self._error(exc, ctx) from None

    def _error(self, exc: Exception, ctx: RequestContext) -> ConnectError:
        method = ctx.method()
        rpc = f"{method.service_name}/{method.name}"
        if isinstance(exc, Unimplemented | NotImplementedError):
            why = str(exc) or "flytelite does not serve it yet"
            return ConnectError(Code.UNIMPLEMENTED, client_message(f"{rpc} is not implemented: {why}"))
        if isinstance(exc, FlyteliteError):
            return ConnectError(Code[exc.grpc_code], client_message(str(exc)))
        outage = as_outage(exc)
        if outage is not None:
            log.warning("%s failed: %s", rpc, outage)
            return ConnectError(Code[outage.grpc_code], client_message(f"{rpc}: {outage}"))
        log.exception("%s failed", rpc)
        return ConnectError(Code.INTERNAL, client_message(f"{rpc} failed inside flytelite: {type(exc).__name__}: "
                                                          f"{exc}"))
