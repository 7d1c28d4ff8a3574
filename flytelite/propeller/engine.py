"""The engine's public face. TODO: being written."""

from __future__ import annotations

from flytelite.admin.events import EventSink
from flytelite.context import Context, ExecutionKey


class Engine:
    def __init__(self, ctx: Context, sink: EventSink):
        self.ctx, self.sink = ctx, sink

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def notify(self, key: ExecutionKey) -> None:
        """Wake the engine for one execution; safe to call from any thread."""
