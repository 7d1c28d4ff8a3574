"""HTTP requests for every route of flytelite's ASGI app, as Hypothesis strategies.

The routes are read from the app itself (`build_app(ctx).routes`); a route that is one of Flyte's REST
bindings is matched to it (console.rest.flyte_routes) so that its path parameters, query parameters and
body follow the RPC's request message, with the same boundary values as the gRPC requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from google.protobuf import descriptor, json_format
from hypothesis import strategies as st
from starlette.convertors import PathConvertor
from starlette.routing import Mount, Route

from flytelite.console.rest import RestRoute, flyte_routes
from tests.fuzz.strategies import EDGE_STRINGS, FD, Pools, _repeated, integers, mutations, requests

# Query parameters the console's pages and the log endpoint read.
PAGE_QUERY = ["domain", "phase", "workflow", "from", "to", "token", "version", "follow", "offset"]
# Keys of the console's JSON actions (launch, set signal).
ACTION_KEYS = ["kind", "project", "domain", "name", "version", "inputs", "execution_name", "execution",
               "signal_id", "value"]
ACCEPT = ["application/json", "application/octet-stream", "*/*", "", "text/html"]
BAD_BODIES = [b"{", b"[]", b"null", b'{"id": 5}', b'"x"', b"[" * 50_000 + b"]" * 50_000, b"\xff\xfe",
              b'{"a": ' * 5000 + b"1" + b"}" * 5000]


@dataclass(frozen=True)
class HttpRoute:
    """One route of the app: its path format, methods, parameters and, for Flyte's REST API, its binding."""

    path: str
    methods: tuple[str, ...]
    params: tuple[str, ...]
    path_params: frozenset[str]  # those that may hold '/'
    rest: RestRoute | None = None

    @property
    def label(self) -> str:
        return f"{'/'.join(self.methods)} {self.rest.template if self.rest else self.path}"


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None


def app_routes(app) -> list[HttpRoute]:
    """Every route of a Starlette app (a Mount counts as its prefix plus any path below it)."""
    bindings = {f"{r.service}.{r.rpc}.{r.method}.{r.template}": r for r in flyte_routes()}
    routes = []
    for route in app.routes:
        if isinstance(route, Mount):
            routes.append(HttpRoute(route.path + "/{path}", ("GET",), ("path",), frozenset({"path"})))
        elif isinstance(route, Route):
            methods = tuple(sorted(m for m in (route.methods or {"GET"}) if m != "HEAD"))
            params = tuple(route.param_convertors)
            wide = frozenset(n for n, c in route.param_convertors.items() if isinstance(c, PathConvertor))
            routes.append(HttpRoute(route.path_format, methods, params, wide, bindings.get(route.name)))
    return routes


def _field(msg_desc: descriptor.Descriptor, dotted: str) -> descriptor.FieldDescriptor | None:
    fd = None
    for name in dotted.split("."):
        if msg_desc is None:
            return None
        fd = msg_desc.fields_by_name.get(name)
        if fd is None:
            return None
        msg_desc = fd.message_type
    return fd


def _text(fd: descriptor.FieldDescriptor | None, name: str, pools: Pools) -> st.SearchStrategy[str]:
    """A path or query value for field `fd` (or a parameter called `name`), as text."""
    edges = st.sampled_from(EDGE_STRINGS[:12] + ["abc", "-1", "1e999", "true", "maybe", str(2**64)])
    if fd is None or fd.type == FD.TYPE_STRING:
        return pools.strings(fd.name if fd is not None else name)
    if fd.type == FD.TYPE_ENUM:
        names = [v.name for v in fd.enum_type.values] + [str(v.number) for v in fd.enum_type.values]
        return st.one_of(st.sampled_from(names + ["999", "BOGUS"]), edges)
    if fd.type == FD.TYPE_BOOL:
        return st.one_of(st.sampled_from(["true", "false", "1", "0"]), edges)
    if fd.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE, FD.TYPE_MESSAGE, FD.TYPE_BYTES):
        return edges
    return st.one_of(integers(fd.type).map(str), edges)


def _query_fields(desc: descriptor.Descriptor, prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted names of the scalar fields a query string can set, two levels deep."""
    names = []
    for fd in desc.fields:
        if fd.type == FD.TYPE_MESSAGE:
            if depth < 1 and not _repeated(fd):
                names += _query_fields(fd.message_type, f"{prefix}{fd.name}.", depth + 1)
        else:
            names.append(prefix + fd.name)
    return names


@st.composite
def _body(draw, route: HttpRoute, pools: Pools) -> tuple[bytes, str]:
    """A body and its content type."""
    kind = draw(st.sampled_from(["json", "protobuf", "mutated", "bad"]))
    if kind == "bad":
        return draw(st.sampled_from(BAD_BODIES)), "application/json"
    if route.rest is None or route.rest.body != "*":
        if kind == "json":
            keys = st.sampled_from(ACTION_KEYS)
            values = st.one_of(pools.strings("name"), st.integers(), st.none(), st.booleans(),
                               st.dictionaries(pools.strings("name"), pools.strings("value"), max_size=3))
            return json.dumps(draw(st.dictionaries(keys, values, max_size=6))).encode(), "application/json"
        return draw(st.binary(max_size=64)), "application/octet-stream"
    msg = draw(requests(route.rest.request_type.DESCRIPTOR, pools))
    data = msg.SerializeToString()
    if kind == "protobuf":
        return data, "application/octet-stream"
    if kind == "mutated":
        return draw(mutations(data)), "application/octet-stream"
    try:
        return json_format.MessageToJson(msg).encode(), "application/json"
    except (ValueError, TypeError, json_format.Error):  # a Timestamp beyond JSON's range, NaN, ...: send bytes
        return data, "application/octet-stream"


@st.composite
def http_requests(draw, routes: list[HttpRoute], pools: Pools) -> HttpRequest:
    route = draw(st.sampled_from(routes))
    method = draw(st.sampled_from(route.methods))
    rest_fields = route.rest.fields if route.rest else []
    request_desc = route.rest.request_type.DESCRIPTOR if route.rest else None
    path = route.path
    for i, name in enumerate(route.params):
        fd = _field(request_desc, rest_fields[i]) if request_desc is not None and i < len(rest_fields) else None
        value = draw(_text(fd, name, pools))
        path = path.replace(f"{{{name}}}", quote(value, safe="/" if name in route.path_params else ""), 1)
    query: list[tuple[str, str]] = []
    if request_desc is not None and route.rest.body != "*":
        names = _query_fields(request_desc) + ["bogus"]
        for dotted in draw(st.lists(st.sampled_from(names), max_size=4)):
            query.append((dotted, draw(_text(_field(request_desc, dotted), dotted.split(".")[-1], pools))))
    elif route.rest is None:
        for key in draw(st.lists(st.sampled_from(PAGE_QUERY), max_size=3)):
            query.append((key, draw(pools.strings(key))))
    if query:
        path += "?" + urlencode(query)
    headers = {"Accept": draw(st.sampled_from(ACCEPT))}
    body = None
    if method in ("POST", "PUT", "PATCH", "DELETE") and (route.rest is None or route.rest.body == "*"):
        body, content_type = draw(_body(route, pools))
        headers["Content-Type"] = content_type
    return HttpRequest(method, path, headers, body)
