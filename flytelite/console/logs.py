"""GET /logs/<path>: task attempt log files under config.logs_dir, as plain text; nothing outside it.

Propeller links each attempt's log as f"{ctx.public_url}/logs/<path relative to logs_dir>".
`?follow=1` wraps the end of the log in a page that reloads itself every two seconds.
`?offset=N` answers the bytes from N on (at most OFFSET_CHUNK_BYTES), with headers
X-Log-Size and X-Next-Offset: the console's log viewer streams a running task this way.
"""

from __future__ import annotations

import html
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from flytelite.config import DEFAULT_DOMAINS
from flytelite.context import Context
from flytelite.errors import client_message
from flytelite.logs import resolve_log

# The follow view shows the end of a log; the whole file is one click away.
FOLLOW_TAIL_BYTES = 256 * 1024
OFFSET_CHUNK_BYTES = 256 * 1024


def log_owners(relative: str) -> list[tuple[str, str]]:
    """The (project, domain) pairs an attempt's log may belong to: its folder is named
    `<project>-<domain>-<execution>`, and a project's name may itself hold a domain's; [] for the server's own
    logs (agents, zygotes)."""
    folder = relative.split("/", 1)[0]
    return [(folder[:i], domain) for domain in DEFAULT_DOMAINS
            for i in range(len(folder)) if folder.startswith(f"-{domain}-", i) and i > 0]


def log_endpoint(ctx: Context):
    def serve_log(request: Request) -> Response:
        relative = request.path_params["path"]
        target = resolve_log(ctx.config.logs_dir, relative)
        if target is None:
            return PlainTextResponse(client_message(f"no log file {relative!r} under flytelite's logs folder") + "\n",
                                     status_code=404)
        offset = request.query_params.get("offset")
        if offset is not None:
            if not offset.isdigit():
                return PlainTextResponse(f"offset must be a byte count, got {offset!r}\n", status_code=400)
            return _from_offset(target, int(offset))
        if request.query_params.get("follow") not in (None, "", "0"):
            return HTMLResponse(_follow_page(relative, _tail(target)))
        return FileResponse(target, media_type="text/plain; charset=utf-8")

    return serve_log


def _from_offset(path: Path, offset: int) -> Response:
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        # A log never shrinks; an offset past the end (a stale viewer) starts again from the top.
        start = offset if offset <= size else 0
        f.seek(start)
        data = f.read(OFFSET_CHUNK_BYTES)
    headers = {"X-Log-Size": str(size), "X-Next-Offset": str(start + len(data)), "Cache-Control": "no-store"}
    return Response(data, media_type="text/plain; charset=utf-8", headers=headers)


def _tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - FOLLOW_TAIL_BYTES))
        data = f.read()
    prefix = f"... (showing the last {FOLLOW_TAIL_BYTES} of {size} bytes)\n" if size > FOLLOW_TAIL_BYTES else ""
    return prefix + data.decode("utf-8", errors="replace")


def _follow_page(relative: str, text: str) -> str:
    name = html.escape(relative)
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='2'>"
            f"<title>{name}</title></head><body style='margin:0'><pre style='white-space:pre-wrap;margin:8px'>"
            f"{html.escape(text)}</pre><a id='end' href='?'>whole file</a>"
            "<script>window.scrollTo(0, document.body.scrollHeight)</script></body></html>")
