"""The round gate: the engine's rounds run one at a time, unless one is waiting on something else.

A round is Python work broken by many short calls that let go of the GIL: every SQLite statement, every
file read or written. When several rounds run at once in this process's threads, each such call hands
the GIL to another thread and back, and those hand-overs cost more CPU than the rounds gain by
overlapping.

The workers stay, because a round can also wait on the network (an agent's reply, S3, the Kubernetes
API, a distant PostgreSQL), and others must go on meanwhile. So a round starts only when no other round
started less than `fresh_seconds` ago is still running. A round that runs longer than that is taken to
be waiting, and the next one may start beside it.

The gate is kept on the event loop, before a round is handed to a thread: a round that must wait holds no
thread, and a round's end wakes no blocked thread, only the one waiting round whose turn it is.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
# Longer than a round's own work (a few milliseconds); short enough that a waiting round holds up the
# others only briefly.
FRESH_SECONDS = 0.02


class RoundGate:
    """Used from one event loop's tasks."""

    def __init__(self, fresh_seconds: float = FRESH_SECONDS):
        self._fresh = fresh_seconds
        self._started: dict[int, float] = {}  # running calls: when each started (the loop's clock)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._tokens = itertools.count()

    async def run(self, start: Callable[[], Awaitable[T]]) -> T:
        """Await `start()` once no call started less than `fresh_seconds` ago is running."""
        loop = asyncio.get_running_loop()
        while self._started:
            young_for = self._fresh - (loop.time() - max(self._started.values()))
            if young_for <= 0:
                break
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(young_for, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if waiter in self._waiters:  # woken by its timer, or cancelled
                    self._waiters.remove(waiter)
        token = next(self._tokens)
        self._started[token] = loop.time()
        try:
            return await start()
        finally:
            del self._started[token]
            while self._waiters:
                if _wake(self._waiters.popleft()):
                    break


def _wake(waiter: asyncio.Future[None]) -> bool:
    """Let a waiting call check the gate again; False if it no longer waits."""
    if waiter.done():
        return False
    waiter.set_result(None)
    return True
