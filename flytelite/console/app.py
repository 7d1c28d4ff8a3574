"""HTTP app. TODO: being written."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from flytelite.context import Context


def build_app(ctx: Context) -> Starlette:
    async def healthz(_request: Request):
        return PlainTextResponse("ok" if ctx.ready else "starting", status_code=200 if ctx.ready else 503)

    return Starlette(routes=[Route("/healthz", healthz)])
