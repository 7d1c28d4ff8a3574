"""The server's own retention run: `gc.older_than` every `gc.interval_seconds`, on one replica only.

Engine replicas campaign for the "gc" leadership (server/leadership.py); only the leader collects, so
replicas never race to delete the same executions. A new leader collects at once, then every interval.
What is removed is retention.collect's business.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from flytelite.config import parse_duration
from flytelite.context import Context
from flytelite.retention import collect
from flytelite.server.leadership import Leadership

log = logging.getLogger(__name__)

GC = "gc"


class Collector:
    def __init__(self, ctx: Context, leadership: Leadership):
        self.ctx, self.leadership = ctx, leadership
        self.older_than = timedelta(seconds=parse_duration(ctx.config.gc.older_than))
        self.interval = ctx.config.gc.interval_seconds
        self._stopping = asyncio.Event()
        self._last: float | None = None

    async def run(self) -> None:
        log.info("retention: executions finished more than %s ago are removed every %.0f s (by the %r leader)",
                 self.older_than, self.interval, GC)
        campaign_stop = asyncio.Event()
        campaign = asyncio.create_task(self.leadership.campaign(campaign_stop), name="gc-leadership")
        try:
            while not self._stopping.is_set():
                now = self.ctx.clock.monotonic()
                if self.leadership.held() and (self._last is None or now - self._last >= self.interval):
                    self._last = now
                    try:
                        await asyncio.to_thread(collect, self.ctx, self.older_than)
                    except Exception:
                        log.exception("retention run failed; trying again in %.0f s", self.interval)
                elif not self.leadership.held():
                    self._last = None  # a replica that leads again collects at once
                try:
                    await asyncio.wait_for(self._stopping.wait(), timeout=self.leadership.renew_seconds)
                except asyncio.TimeoutError:
                    pass
        finally:
            campaign_stop.set()
            await campaign

    def stop(self) -> None:
        self._stopping.set()
