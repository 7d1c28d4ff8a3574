"""Flyte's REST API (`/api/v1/...`), as FlyteAdmin's grpc-gateway serves it, over the in-process servicers.

The routes are not written out by hand: they are read from the `google.api.http`
annotations in flyteidl's service descriptors (AdminService, SignalService,
DataProxyService), so every path, verb and body rule is exactly Flyte's. A request
is built from path and query parameters (or the JSON / protobuf body), the same
servicer method the gRPC server runs is called in a worker thread (the event loop
runs the engine), and the response is encoded as FlyteAdmin's gateway encodes it:
protobuf for `Accept: application/octet-stream`, JSON with proto field names for
`application/json`, lowerCamelCase JSON otherwise. Errors are JSON
`{"error", "message", "code", "details"}` with the HTTP status flytelite.errors names.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor, json_format, message_factory
from google.protobuf.message import DecodeError, Message
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from flytelite.admin.audit import AUDITED, describe, describe_call
from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.auth.http import CHALLENGE, IDENTITY, REFUSED
from flytelite.auth.roles import Authorizer, request_target, rpc_permission, serve_as
from flytelite.errors import (
    FlyteliteError,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unimplemented,
    as_outage,
    client_message,
)
from flytelite.metrics import Metrics, rpc_prefix

log = logging.getLogger(__name__)

PROTOBUF = "application/octet-stream"
# grpc.StatusCode numbers, for the `code` field of error bodies (grpc-gateway's shape).
_GRPC_CODES = {"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7,
               "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9, "UNIMPLEMENTED": 12, "INTERNAL": 13,
               "UNAVAILABLE": 14, "UNAUTHENTICATED": 16}
_FD = descriptor.FieldDescriptor
# The google.api.http method option. googleapis-common-protos' stubs type it as a plain FieldDescriptor,
# where types-protobuf's Extensions want an extension's own type: Any bridges the two stubs.
_HTTP_OPTION: Any = annotations_pb2.http


@dataclass(frozen=True)
class RestRoute:
    """One HTTP binding of one RPC, as the service's proto declares it."""

    service: str
    rpc: str
    method: str
    # Flyte's path template, e.g. /api/v1/executions/{id.project}/{id.domain}/{id.name}
    template: str
    # "*": the whole request message is the body; "": request fields come from path and query.
    body: str
    request_type: type[Message]

    @property
    def fields(self) -> list[str]:
        """Dotted request fields bound by the path, in order."""
        return [part[1:-1] for part in self.template.split("/") if part.startswith("{")]

    @property
    def starlette_path(self) -> str:
        """The template with Starlette-safe parameter names (p0, p1, ...)."""
        out, i = [], 0
        for part in self.template.split("/"):
            if part.startswith("{"):
                part, i = f"{{p{i}}}", i + 1
            out.append(part)
        return "/".join(out)


def flyte_routes() -> list[RestRoute]:
    """Every HTTP binding declared in flyteidl's AdminService, SignalService and DataProxyService."""
    routes = []
    for service in GRPC_SERVICES:
        service_name = service.name
        for method in service.descriptor.methods:
            options = method.GetOptions()
            if not options.HasExtension(_HTTP_OPTION):
                continue
            rule: http_pb2.HttpRule = options.Extensions[_HTTP_OPTION]
            request_type = message_factory.GetMessageClass(method.input_type)
            for binding in (rule, *rule.additional_bindings):
                verb = binding.WhichOneof("pattern")
                routes.append(RestRoute(service_name, method.name, verb.upper(), getattr(binding, verb),
                                        binding.body or rule.body, request_type))
    return routes


# ---- requests ----------------------------------------------------------------------------------

def set_field(msg: Message, dotted: str, text: str) -> None:
    """Set `dotted` (proto or JSON field names, dot-separated) in `msg` from a path or query string."""
    *parents, leaf = dotted.split(".")
    target = msg
    for name in parents:
        field = _field(target, name, dotted)
        if field.type != _FD.TYPE_MESSAGE or _repeated(field):
            raise InvalidArgument(f"parameter {dotted!r}: {name!r} is not a message field")
        target = getattr(target, field.name)
    field = _field(target, leaf, dotted)
    value = _scalar(field, text, dotted)
    try:
        if _repeated(field):
            getattr(target, field.name).append(value)
        else:
            setattr(target, field.name, value)
    except (ValueError, TypeError) as exc:  # out of the field's range: ?limit=-1 for a uint32
        kind = _type_name(field)
        raise InvalidArgument(f"parameter {dotted!r}: {text!r} is out of range for a {kind} ({exc})") from None


def _type_name(field: descriptor.FieldDescriptor) -> str:
    """`uint32`, `int64`, ... as the proto declares the field."""
    names = {v: k.removeprefix("TYPE_").lower() for k, v in vars(_FD).items() if k.startswith("TYPE_")}
    return names.get(field.type, "field")


def _repeated(field: descriptor.FieldDescriptor) -> bool:
    # protobuf 7 dropped `label`; older releases lack `is_repeated`.
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == _FD.LABEL_REPEATED  # type: ignore[attr-defined]  # protobuf < 7 only


def _field(msg: Message, name: str, dotted: str) -> descriptor.FieldDescriptor:
    fields = msg.DESCRIPTOR.fields_by_name
    field = fields.get(name) or next((f for f in msg.DESCRIPTOR.fields if f.json_name == name), None)
    if field is None:
        raise InvalidArgument(f"parameter {dotted!r}: {msg.DESCRIPTOR.full_name} has no field {name!r} "
                              f"(its fields: {', '.join(sorted(fields))})")
    # The stubs type upb's descriptors apart from descriptor.FieldDescriptor; at run time they are that class.
    return cast(descriptor.FieldDescriptor, field)


def _enum(field: descriptor.FieldDescriptor) -> descriptor.EnumDescriptor:
    assert field.enum_type is not None, "an enum field has its enum's descriptor"
    return field.enum_type


def _scalar(field: descriptor.FieldDescriptor, text: str, dotted: str):
    try:
        if field.type == _FD.TYPE_STRING:
            return text
        if field.type == _FD.TYPE_BOOL:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if field.type == _FD.TYPE_ENUM:
            by_name = _enum(field).values_by_name.get(text)
            return by_name.number if by_name is not None else _enum(field).values_by_number[int(text)].number
        if field.type in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
            return float(text)
        if field.type == _FD.TYPE_BYTES:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if field.type == _FD.TYPE_MESSAGE:
            raise InvalidArgument(f"parameter {dotted!r} names a message; name one of its fields instead")
        return int(text)
    except (ValueError, KeyError) as exc:
        expected = ("one of " + ", ".join(_enum(field).values_by_name) if field.type == _FD.TYPE_ENUM
                    else "true or false" if field.type == _FD.TYPE_BOOL else "a number")
        raise InvalidArgument(f"parameter {dotted!r}: {text!r} is not a valid value ({expected})") from exc


async def build_request(route: RestRoute, request: Request) -> Message:
    """The request message: body (for body "*"), then query parameters, then path parameters."""
    msg = route.request_type()
    if route.body == "*":
        raw = await request.body()
        if raw:
            try:
                if PROTOBUF in request.headers.get("content-type", ""):
                    msg.ParseFromString(raw)
                else:
                    json_format.Parse(raw, msg, ignore_unknown_fields=True)
            except (json_format.ParseError, DecodeError, UnicodeDecodeError, RecursionError) as exc:
                raise InvalidArgument(f"request body is not a valid {msg.DESCRIPTOR.full_name}: {exc}") from exc
    else:
        for key, value in request.query_params.multi_items():
            set_field(msg, key, value)
    for i, dotted in enumerate(route.fields):
        set_field(msg, dotted, request.path_params[f"p{i}"])
    return msg


# ---- responses ---------------------------------------------------------------------------------

def encode(msg: Message, accept: str) -> Response:
    if PROTOBUF in accept:
        return Response(msg.SerializeToString(), media_type=PROTOBUF)
    # FlyteAdmin's gateway: proto names for application/json, the gateway's camelCase default otherwise;
    # both print unpopulated fields.
    data = json_format.MessageToDict(msg, always_print_fields_with_no_presence=True,
                                     preserving_proto_field_name="application/json" in accept)
    return JSONResponse(data)


def error_response(exc: Exception, what: str) -> JSONResponse:
    if isinstance(exc, FlyteliteError):
        status, code, message = exc.http_status, exc.grpc_code, client_message(str(exc))
    elif isinstance(exc, NotImplementedError):
        status, code, message = 501, "UNIMPLEMENTED", client_message(f"{what} is not implemented by flytelite yet. {exc}")
    elif (outage := as_outage(exc)) is not None:
        log.warning("%s failed: %s", what, outage)
        status, code, message = outage.http_status, outage.grpc_code, client_message(f"{what}: {outage}")
    else:
        log.exception("%s failed", what)
        status, code, message = 500, "INTERNAL", client_message(f"{what} failed inside flytelite: {type(exc).__name__}: {exc}")
    return JSONResponse({"error": message, "message": message, "code": _GRPC_CODES.get(code, 13), "details": []},
                        status_code=status, headers=CHALLENGE if status == 401 else None)


# ---- wiring ------------------------------------------------------------------------------------

Servicers = dict[str, object]


class RestContext:
    """The context of an RPC called over REST: its request's headers, as gRPC invocation metadata (what an RPC
    reads of its context, such as the caller's bearer token)."""

    def __init__(self, headers):
        self._metadata = tuple((k.lower(), v) for k, v in headers.items())

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


# Records an audited call made over HTTP: (request, action, (project, domain, resource), outcome, message).
HttpAudit = Callable[[Request, str, tuple[str, str, str], str, str], None]


def _endpoint(route: RestRoute, call: Callable[[Message, RestContext], Message], metrics: Metrics | None,
              audit: HttpAudit | None, authorizer: Authorizer | None):
    what = f"{route.method} {route.template} ({route.service}.{route.rpc})"
    # Counted as the RPC's gRPC calls are, as FlyteAdmin's gateway calls them over gRPC.
    prefix = rpc_prefix(f"/flyteidl.service.{route.service}/{route.rpc}")
    audit = audit if route.rpc in AUDITED else None
    needs = rpc_permission(route.rpc)

    async def endpoint(request: Request) -> Response:
        start = time.perf_counter()
        msg, refused = None, request.scope.get(REFUSED)
        try:
            try:
                msg = await build_request(route, request)
            finally:
                if refused is not None:  # authentication refused it: answered 401, audited with what it named
                    raise Unauthenticated(refused)
            context = RestContext(request.headers)
            if authorizer is None:
                reply = await run_in_threadpool(call, msg, context)
            else:
                reply = await run_in_threadpool(serve_as, authorizer, request.scope.get(IDENTITY), needs,
                                                request_target(msg), lambda: call(msg, context))
        except Exception as exc:  # noqa: BLE001 - the API edge: every failure becomes a JSON error
            response = error_response(exc, what)
            if metrics is not None:
                metrics.record_rpc(prefix, code_name(exc), (time.perf_counter() - start) * 1000.0)
            if audit is not None:
                named = describe(msg) if msg is not None else ("", "", "")
                await run_in_threadpool(audit, request, route.rpc, named, code_name(exc), str(exc))
            return response
        if metrics is not None:
            metrics.record_rpc(prefix, "OK", (time.perf_counter() - start) * 1000.0)
        if audit is not None:
            await run_in_threadpool(audit, request, route.rpc, describe_call(msg, reply), "OK", "")
        return encode(reply, request.headers.get("accept", ""))

    return endpoint


def code_name(exc: Exception) -> str:
    if isinstance(exc, FlyteliteError):
        return exc.grpc_code
    return "UNIMPLEMENTED" if isinstance(exc, NotImplementedError) else "INTERNAL"


def _caller(route: RestRoute, servicers: Servicers) -> Callable[[Message, RestContext], Message]:
    servicer = servicers.get(route.service)
    if servicer is None:
        def missing(_msg: Message, _context: RestContext) -> Message:
            raise Unimplemented(f"{route.service} is not served by flytelite")
        return missing
    return getattr(servicer, route.rpc)


def rest_routes(servicers: Servicers, metrics: Metrics | None = None, audit: HttpAudit | None = None,
                authorizer: Authorizer | None = None) -> Iterator[Route]:
    """Starlette routes for every Flyte REST binding, calling `servicers[service_name].<rpc>` (counting each
    call in `metrics`, recording the audited ones with `audit`, checking each against the caller's roles with
    `authorizer` when authentication is on)."""
    for route in flyte_routes():
        yield Route(route.starlette_path, _endpoint(route, _caller(route, servicers), metrics, audit, authorizer),
                    methods=[route.method], name=f"{route.service}.{route.rpc}.{route.method}.{route.template}")


def unknown_api(request: Request) -> Response:
    if request.scope.get(REFUSED) is not None:
        return error_response(Unauthenticated(request.scope[REFUSED]), "REST")
    return error_response(NotFound(
        f"no Flyte REST API at {request.method} {request.url.path}; see flyteidl's service/admin.proto for the paths"),
        "REST")
