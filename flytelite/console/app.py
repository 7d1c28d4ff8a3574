"""flytelite's HTTP side: health, Flyte's REST API, the console pages, task logs and signed blob URLs.

Routing only. The console lives at Flyte console's paths, so the links flytekit
prints open the right page. Page handlers are plain functions, so Starlette runs
their database and blob reads in its thread pool, off the event loop the engine
shares; the REST API does the same with run_in_threadpool.
"""

from __future__ import annotations

from pathlib import Path

from flyteidl2.common.phase_pb2 import ActionPhase as PhaseNumber
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flytelite.admin.audit import AuditLog, Caller
from flytelite.admin.dataproxy import signed_blobs
from flytelite.admin.grpc_services import servicers
from flytelite.auth.connect import connect_auth
from flytelite.auth.http import ACCESS_COOKIE, IDENTITY, AuthMiddleware, auth_routes
from flytelite.auth.roles import Authorizer, Permission, serve_as
from flytelite.connect import app as connect
from flytelite.console import actions, entity_pages, list_pages, views
from flytelite.console.execution_page import execution_page
from flytelite.console.items_page import ITEM_PHASES, item_page, items_page
from flytelite.console.layout import DEFAULT_DOMAIN, esc, layout, may, not_found_page
from flytelite.console.literals import Links
from flytelite.console.logs import log_endpoint, log_owners
from flytelite.console.rest import rest_routes, unknown_api
from flytelite.console.run_page import PHASES, run_page, runs_page
from flytelite.console.transfer import Transfers
from flytelite.console.views import ArrayItemsView
from flytelite.context import Context, ExecutionKey
from flytelite.errors import FlyteliteError, InvalidArgument, NotFound, as_outage, client_message
from flytelite.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from flytelite.runs import store as runs_store
from flytelite.storage.links import blob_links
from flytelite.storage.signing import DOWNLOAD_ROUTE, UPLOAD_ROUTE, SignedBlobs
from flytelite.tracing import Tracing

# Blob links on a page stay valid this long (a page left open keeps refreshing them while running).
LINK_SECONDS = 24 * 3600
# Runs a Flyte 2 runs page lists (the newest).
RUNS_LISTED = 200
STATIC = Path(__file__).parent / "static"


def build_app(ctx: Context) -> Starlette:
    signed = signed_blobs(ctx)
    transfers = Transfers(ctx, signed)
    by_name = servicers(ctx)
    admin, signals = by_name["AdminService"], by_name["SignalService"]

    async def healthz(_request: Request) -> Response:
        status, why = ctx.health()
        return PlainTextResponse(why, status_code=status)

    def metrics(_request: Request) -> Response:
        return Response(ctx.metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    auth = ctx.auth
    authorizer = auth.authorizer if auth is not None else None

    def page(render, needs: Permission = Permission.VIEW):
        """A page handler: render(request, project, domain) -> HTML, for a caller with permission `needs` in the
        project and domain of its path (every project when it names none; signed in is enough for the list of
        projects); flytelite errors become error pages."""
        def handler(request: Request) -> Response:
            p = request.path_params
            project = p.get("project", "")
            domain = p.get("domain") or request.query_params.get("domain") or DEFAULT_DOMAIN
            try:
                if authorizer is None:
                    return HTMLResponse(render(request, project, domain))
                listing = needs == Permission.VIEW and not project  # the projects page lists what one may see
                return HTMLResponse(serve_as(authorizer, request.scope.get(IDENTITY), None if listing else needs,
                                             (project, domain if project else ""),
                                             lambda: render(request, project, domain)))
            except NotFound as exc:
                return HTMLResponse(not_found_page(client_message(str(exc))), status_code=404)
            except FlyteliteError as exc:
                message = esc(client_message(str(exc)))
                return HTMLResponse(layout("Error", f"<h1>Error</h1><div class='error'><pre>{message}</pre></div>"),
                                    status_code=exc.http_status)
        return handler

    def execution(request: Request, project: str, domain: str) -> str:
        name = request.path_params["name"]
        view = views.load_execution(ctx, project, domain, name)
        if view is None:
            raise NotFound(f"There is no execution {name} in project {project}, domain {domain}.")
        return execution_page(view, blob_link(ctx, signed), ctx.clock.now())

    def array_items(request: Request, project: str, domain: str) -> ArrayItemsView:
        p, q = request.path_params, request.query_params
        attempt = _number(q, "attempt")
        items = views.load_array_items(ctx, project, domain, p["name"], p["node"], attempt)
        if items is None or (attempt is not None and attempt not in items.attempts):
            raise NotFound(f"Execution {p['name']} in project {project}, domain {domain} has no array node "
                           f"{p['node']}{f' with an attempt {attempt}' if attempt is not None else ''}.")
        return items

    def items_list(request: Request, project: str, domain: str) -> str:
        items = array_items(request, project, domain)
        phase = request.query_params.get("phase", "")
        if phase and phase not in ITEM_PHASES:
            raise InvalidArgument(f"phase {phase!r} is not one of {', '.join(sorted(ITEM_PHASES))}")
        return items_page(items, phase, _number(request.query_params, "page") or 0,
                          lambda item: views.item_error(ctx, items, item.index, item.attempts[-1].retry_attempt))

    def item(request: Request, project: str, domain: str) -> str:
        items = array_items(request, project, domain)
        index = request.path_params["index"]
        if index >= len(items.items):
            raise NotFound(f"Array node {items.node_id} has {len(items.items)} items: there is no item {index}.")
        one = items.items[index]
        errors = {a.retry_attempt: views.item_error(ctx, items, index, a.retry_attempt) for a in one.attempts
                  if a.phase != "SUCCEEDED"}
        inputs, outputs = views.item_data(ctx, items, one)
        return item_page(items, one, errors, inputs, outputs, blob_link(ctx, signed))

    def entity(request: Request, project: str, domain: str) -> str:
        p = request.path_params
        kind = p.get("kind") or entity_pages.SINGULAR.get(p.get("singular", ""), "")
        if kind not in entity_pages.KINDS:
            raise NotFound(f"the console has no {p.get('kind') or p.get('singular')!r} pages")
        version = p.get("version") or request.query_params.get("version", "")
        if "name" in p:
            return entity_pages.entity_page(admin, kind, project, domain, p["name"], version)
        return entity_pages.entity_list_page(admin, kind, project, domain)

    def run(request: Request, project: str, domain: str) -> str:
        name = request.path_params["run"]
        actions = runs_store.run_actions(ctx, ExecutionKey(project, domain, name))
        if not actions:
            raise NotFound(f"There is no run {name} in project {project}, domain {domain}.")
        selected = request.query_params.get("i", "")
        chosen = next((a for a in actions if a.name == selected), None)
        data = views.action_data(ctx, chosen) if chosen is not None else None
        return run_page(project, domain, name, actions, ctx.clock.now(), selected, data, blob_link(ctx, signed),
                        may("launch", project, domain))

    def runs(request: Request, project: str, domain: str) -> str:
        phase, task = request.query_params.get("phase", ""), request.query_params.get("task", "")
        if phase and phase not in PHASES:
            raise InvalidArgument(f"phase {phase!r} is not one of {', '.join(PHASES)}")
        found = runs_store.roots(ctx, project, domain, phase=PhaseNumber.Value(f"ACTION_PHASE_{phase}") if phase
                                 else None, newest=RUNS_LISTED if not task else None)
        if task:
            found = [r for r in found if task in runs_store.spec(r).task.id.name][:RUNS_LISTED]
        return runs_page(project, domain, found, phase, task)

    def unknown(request: Request) -> Response:
        return HTMLResponse(not_found_page(f"The console has no page at {request.url.path}."), status_code=404)

    def guarded(endpoint, owners):
        """`endpoint` for a caller who may view every (project, domain) `owners(request)` names (administer
        every project when it names none)."""
        if authorizer is None:
            return endpoint

        def serve(request: Request) -> Response:
            targets = owners(request) or [("", "")]
            try:
                for target in targets[1:]:
                    serve_as(authorizer, request.scope.get(IDENTITY), Permission.VIEW, target, lambda: None)
                return serve_as(authorizer, request.scope.get(IDENTITY),
                                Permission.VIEW if targets[0][0] else Permission.ADMIN, targets[0],
                                lambda: endpoint(request))
            except FlyteliteError as exc:
                return PlainTextResponse(client_message(str(exc)) + "\n", status_code=exc.http_status)
        return serve

    base = "/console/projects/{project}"
    audit_log = AuditLog(ctx)

    def http_audit(request: Request, action: str, named: tuple[str, str, str], outcome: str, message: str) -> None:
        subject, client_id = (auth.identify({k.lower(): v for k, v in request.headers.items()},
                                            request.cookies.get(ACCESS_COOKIE, "")) if auth is not None else ("", ""))
        who = Caller(subject, client_id, request.client.host if request.client else "")
        audit_log.record(action, named, who, outcome, message)
    app = Starlette(routes=[*(auth_routes(auth) if auth is not None else []),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
        Route("/favicon.ico", lambda _r: Response(status_code=204)),
        Route("/", lambda _r: RedirectResponse("/console")),
        *rest_routes(by_name, ctx.metrics, http_audit, authorizer),
        Route("/api/{rest:path}", unknown_api, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        *connect.routes(ctx, by_name, *(connect_auth(auth, audit_log) if auth is not None else ())),
        Route("/v2/domain/{domain}/project/{project}/runs", page(runs)),
        Route("/v2/domain/{domain}/project/{project}/runs/{run}", page(run)),
        Route("/console/api/launch", actions.json_action("launch", lambda form: actions.launch(admin, form),
                                                         "CreateExecution", http_audit, authorizer), methods=["POST"]),
        Route("/console/api/signals", actions.json_action("set signal", lambda form: actions.set_signal_value(
            signals, actions.signal_type_reader(signals), form), "SetSignal", http_audit, authorizer),
              methods=["POST"]),
        Mount("/console/static", StaticFiles(directory=STATIC), name="static"),
        Route("/console/audit", page(lambda r, p, d: list_pages.audit_page(audit_log.events(limit=500)),
                                     needs=Permission.ADMIN)),
        Route("/console", page(lambda r, p, d: entity_pages.projects_page(admin))),
        Route("/console/", page(lambda r, p, d: entity_pages.projects_page(admin))),
        Route(base, page(lambda r, p, d: entity_pages.project_page(admin, p, d))),
        Route(base + "/executions", page(lambda r, p, d: list_pages.executions_page(admin, p, d, r.query_params))),
        Route(base + "/schedules", page(lambda r, p, d: list_pages.schedules_page(admin, ctx, p, d))),
        Route(base + "/domains/{domain}/executions/{name}", page(execution)),
        Route(base + "/domains/{domain}/executions/{name}/relaunch",
              page(lambda r, p, d: entity_pages.relaunch_page(admin, p, d, r.path_params["name"]))),
        Route(base + "/domains/{domain}/executions/{name}/nodes/{node}/items", page(items_list)),
        Route(base + "/domains/{domain}/executions/{name}/nodes/{node}/items/{index:int}", page(item)),
        Route(base + "/domains/{domain}/{singular}/{name}/version/{version}", page(entity)),
        Route(base + "/domains/{domain}/{singular}/{name}", page(entity)),
        Route(base + "/{kind}", page(entity)),
        Route(base + "/{kind}/{name}", page(entity)),
        Route("/console/{rest:path}", unknown),
        Route("/logs/{path:path}", guarded(log_endpoint(ctx), lambda r: log_owners(r.path_params["path"]))),
        *_pod_log_routes(ctx, authorizer),
        Route(UPLOAD_ROUTE + "/{token}", transfers.put, methods=["PUT"]),
        Route(DOWNLOAD_ROUTE + "/{token}/{filename:path}", transfers.get, methods=["GET"]),
    ], exception_handlers={Exception: unexpected})
    if auth is not None:
        app.add_middleware(AuthMiddleware, auth=auth)
    if ctx.tracing.enabled:  # added last: outermost, so refused requests have their span too
        app.add_middleware(TracingMiddleware, tracing=ctx.tracing)
    return app


async def unexpected(request: Request, exc: Exception) -> Response:
    """What a page, upload or log route answers for a failure it did not expect: an outage of a dependency as
    such (503 or 507, naming it), anything else as a 500 (Starlette logs it)."""
    outage = as_outage(exc)
    if outage is not None:
        return PlainTextResponse(client_message(f"{request.url.path}: {outage}"), status_code=outage.http_status)
    return PlainTextResponse("flytelite failed to answer this request; its log says why", status_code=500)


class TracingMiddleware:
    """A server span per HTTP request, child of the caller's when its headers carry W3C trace context."""

    def __init__(self, app, tracing: Tracing):
        self.app, self.tracing = app, tracing

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {name.decode(): value.decode() for name, value in scope.get("headers", ())
                   if name in (b"traceparent", b"tracestate")}
        with self.tracing.span(f"HTTP {scope['method']} {scope['path']}", parent=carrier or None, server=True):
            await self.app(scope, receive, send)


def _pod_log_routes(ctx: Context, authorizer: Authorizer | None) -> list[Route]:
    """The pods' log links, when tasks run as pods (the kubernetes client is imported only then)."""
    if not ctx.config.uses_kubernetes:
        return []
    from flytelite.console.pod_logs import pod_log_endpoint

    def may_view(request: Request, project: str, domain: str) -> None:
        if authorizer is not None:
            serve_as(authorizer, request.scope.get(IDENTITY), Permission.VIEW, (project, domain), lambda: None)

    return [Route("/k8s/logs/{namespace}/{pod}", pod_log_endpoint(ctx.config.kubernetes, may_view))]


def _number(params, name: str) -> int | None:
    """A query parameter that must be a whole number of at least 0 (None when absent)."""
    text = params.get(name, "")
    if not text:
        return None
    if not text.isdigit():
        raise InvalidArgument(f"{name} must be a whole number of at least 0, got {text!r}")
    return int(text)


def blob_link(ctx: Context, signed: SignedBlobs) -> Links:
    """How a page links blobs: a signed download URL (on this server, or the bucket's presigned one), None
    outside the store; a folder's files listed from the store."""
    links = blob_links(ctx.blobs, signed, lambda: "")
    now = int(ctx.clock.now().timestamp())

    def link(uri: str) -> str | None:
        try:
            return links.download(uri, now, LINK_SECONDS)
        except InvalidArgument:
            return None

    return Links(link, ctx.blobs.files)
