"""A real HTTP server (uvicorn in a thread) over build_app, with a real SQLite store and blob folder."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest
import uvicorn

from flytelite.config import Config
from flytelite.console.app import build_app
from flytelite.context import Context
from flytelite.server.app import build_context
from flytelite.testing import database_url_for, free_port


@dataclass
class Console:
    ctx: Context
    url: str


@pytest.fixture
def console(tmp_path):
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home"), max_upload_bytes=1024 * 1024))
    port = free_port()
    ctx.public_url = f"http://127.0.0.1:{port}"
    ctx.ready = True
    server = uvicorn.Server(uvicorn.Config(build_app(ctx), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    yield Console(ctx, ctx.public_url)
    server.should_exit = True
    thread.join(10)
    ctx.db.dispose()
