"""The server's health, as GET /healthz answers it: on each beat of the replica's heartbeat, whether the database
can be written, the blob store reached and the disks the server writes to still have room. What fails makes the
server unhealthy, saying why (Context.unhealthy), until a beat passes again; each failure is counted in
/metrics."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from flytelite.context import Context
from flytelite.errors import as_outage
from flytelite.metrics import OWN

log = logging.getLogger(__name__)

# Less room than this on a disk the server writes to makes it unhealthy: its writes there are about to fail.
MIN_FREE_BYTES = 1 << 20


def full_disk(folders: list[str]) -> str:
    """Which of these folders' disks is (about to be) full, said for /healthz; "" for none."""
    for folder in folders:
        try:
            stat = os.statvfs(folder)
        except OSError:
            continue
        free = stat.f_bavail * stat.f_frsize
        if free < MIN_FREE_BYTES:
            return f"the disk of {folder} is full ({free} bytes free): free some space"
    return ""


def local_folders(ctx: Context) -> list[str]:
    """The folders on this machine's disks the server writes to: its home, a local blob store, SQLite's."""
    folders = [str(ctx.config.home)]
    if ctx.blobs.is_local:
        folders.append(ctx.blobs.folder)
    if ctx.db.is_sqlite:
        folders.append(os.path.dirname(ctx.db.engine.url.database or ""))
    return folders


class Health:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        ctx.metrics.gauge(f"{OWN}health:healthy", "1 while GET /healthz answers 200, else 0",
                          lambda: float(ctx.health()[0] == 200))

    async def beat(self, heartbeat: Callable[[], None]) -> None:
        """Write the heartbeat, then look at the blob store and the disks."""
        ctx = self.ctx
        try:
            await asyncio.to_thread(heartbeat)
        except Exception as exc:  # noqa: BLE001 - the next beat may succeed
            return self._failed("database", "the database cannot be written", exc)
        try:
            await asyncio.to_thread(ctx.blobs.exists, ctx.blobs.root)
        except Exception as exc:  # noqa: BLE001 - the next beat may succeed
            return self._failed("blob_store", "the blob store cannot be reached", exc)
        if full := full_disk(local_folders(ctx)):
            return self._failed("disk", full)
        if ctx.unhealthy:
            log.warning("healthy again (was: %s)", ctx.unhealthy)
            ctx.unhealthy = ""

    def _failed(self, dependency: str, what: str, exc: Exception | None = None) -> None:
        self.ctx.metrics.inc(f"{OWN}health:dependency_failures", "Heartbeats that found a dependency out",
                             dependency=dependency)
        reason = what if exc is None else f"{what}: {as_outage(exc) or f'{type(exc).__name__}: {exc}'}"
        if reason != self.ctx.unhealthy:
            log.warning("unhealthy: %s", reason)
        self.ctx.unhealthy = reason
