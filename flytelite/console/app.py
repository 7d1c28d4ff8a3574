"""flytelite's HTTP side: health, the console pages, task logs and the data proxy's signed URLs.

Routing only; pages render in console.pages from what console.views reads.
Page handlers are plain functions, so Starlette runs their database and blob
reads in its thread pool, off the event loop the engine shares.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from flytelite.admin.dataproxy import signed_blobs
from flytelite.console import pages, views
from flytelite.console.logs import log_endpoint
from flytelite.console.transfer import Transfers
from flytelite.context import Context
from flytelite.errors import InvalidArgument
from flytelite.storage.signing import DOWNLOAD_ROUTE, UPLOAD_ROUTE, SignedBlobs, download_url

# Blob links on a page stay valid this long (a page left open keeps refreshing them while running).
LINK_SECONDS = 24 * 3600


def build_app(ctx: Context) -> Starlette:
    signed = signed_blobs(ctx)
    transfers = Transfers(ctx, signed)

    async def healthz(_request: Request) -> Response:
        return PlainTextResponse("ok" if ctx.ready else "starting", status_code=200 if ctx.ready else 503)

    def index(_request: Request) -> Response:
        return HTMLResponse(pages.index_page(views.recent_executions(ctx)))

    def execution(request: Request) -> Response:
        p = request.path_params
        view = views.load_execution(ctx, p["project"], p["domain"], p["name"])
        if view is None:
            return HTMLResponse(pages.not_found_page(
                f"There is no execution {p['name']} in project {p['project']}, domain {p['domain']}."),
                status_code=404)
        return HTMLResponse(pages.execution_page(view, blob_link(ctx, signed)))

    def unknown(request: Request) -> Response:
        return HTMLResponse(pages.not_found_page(
            f"The console has no page at {request.url.path}; it shows executions only."), status_code=404)

    return Starlette(routes=[
        Route("/healthz", healthz),
        Route("/", lambda _r: RedirectResponse("/console")),
        Route("/console", index),
        Route("/console/", index),
        Route("/console/projects/{project}/domains/{domain}/executions/{name}", execution),
        Route("/console/{rest:path}", unknown),
        Route("/logs/{path:path}", log_endpoint(ctx)),
        Route(UPLOAD_ROUTE + "/{token}", transfers.put, methods=["PUT"]),
        Route(DOWNLOAD_ROUTE + "/{token}/{filename:path}", transfers.get, methods=["GET"]),
    ])


def blob_link(ctx: Context, signed: SignedBlobs):
    """href for a blob URI on a page: a signed download URL on this server, or None outside the store."""
    expires = int(ctx.clock.now().timestamp()) + LINK_SECONDS

    def link(uri: str) -> str | None:
        try:
            token = signed.token("GET", uri, expires)
        except InvalidArgument:
            return None
        return download_url("", token, uri.rstrip("/").rsplit("/", 1)[-1])

    return link
