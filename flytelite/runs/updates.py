"""What wakes the API's watch streams of Flyte 2 runs (WatchActionDetails, WatchForUpdates, WatchRuns, ...) when
their actions changed: the engine's rounds and the API's own writes publish the run; each stream then reads what
changed from the database. A stream watches one run (project, domain, name), a project's runs (project,
domain) or every run (()). A stream also reads every POLL_SECONDS without a wake-up, for the changes made by another
replica. Closing (the server stopping) ends every stream."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

# How often a watch stream reads its run without being woken (a change another replica made).
POLL_SECONDS = 2.0

# A run (project, domain, name), a project's runs (project, domain), or every run ().
RunKey = tuple[str, ...]


class RunUpdates:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[RunKey, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self.closed = False

    def publish(self, key: RunKey) -> None:
        """Wake the streams watching run `key`, its project's runs or every run; safe from any thread."""
        key = tuple(key)
        with self._lock:
            waiters = [w for scope in (key, key[:2], ()) for w in self._waiters.get(scope, ())]
        for loop, event in waiters:
            _set_soon(loop, event)

    def close(self) -> None:
        """End every stream (each sees `closed` when it wakes)."""
        with self._lock:
            self.closed = True
            waiters = [w for found in self._waiters.values() for w in found]
        for loop, event in waiters:
            _set_soon(loop, event)

    @asynccontextmanager
    async def watching(self, key: RunKey) -> AsyncIterator[Watch]:
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        key = tuple(key)
        with self._lock:
            self._waiters.setdefault(key, set()).add(entry)
        try:
            yield Watch(self, event)
        finally:
            with self._lock:
                found = self._waiters.get(key)
                if found is not None:
                    found.discard(entry)
                    if not found:
                        del self._waiters[key]


class Watch:
    """One stream's subscription: `changed()` waits for a wake-up (or the poll interval), False once closed."""

    def __init__(self, updates: RunUpdates, event: asyncio.Event):
        self._updates, self._event = updates, event

    async def changed(self) -> bool:
        if not self._updates.closed:
            try:
                await asyncio.wait_for(self._event.wait(), POLL_SECONDS)
            except asyncio.TimeoutError:
                pass
        self._event.clear()
        return not self._updates.closed


def _set_soon(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    try:
        loop.call_soon_threadsafe(event.set)
    except RuntimeError:  # the loop closed: its stream is gone
        pass
