"""The WorkQueue of execution keys the engine's workers drain (client-go workqueue semantics, on asyncio).

- A key waiting in the queue is held once (adding it again is a no-op).
- A key being processed is never handed to a second worker: adding it marks it dirty and it is
  queued again when its worker calls done(). This is the per-key lock of the engine.
- add_after() schedules an add (timers, back-off); the earliest pending timer of a key wins.
- add_threadsafe() may be called from any thread.
All other methods must run on the event loop the queue is bound to.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    pass


class WorkQueue(Generic[K]):
    """A queue of keys of type K (the engine's: ExecutionKey)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._items: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._failures: dict[K, int] = {}
        self._waiters: deque[asyncio.Future] = deque()
        self._shut_down = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def __len__(self) -> int:
        return len(self._items)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def add(self, key: K) -> None:
        if self._shut_down:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._items.append(key)
        self._wake_one()

    def add_threadsafe(self, key: K) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self.add, key)
        except RuntimeError:  # loop closed between the check and the call: the engine is stopping
            pass

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        assert self._loop is not None, "WorkQueue.bind() first"
        when = self._loop.time() + delay
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= when:
                return
            current[1].cancel()
        handle = self._loop.call_at(when, self._fire, key)
        self._timers[key] = (when, handle)

    def add_rate_limited(self, key: K, base: float = 0.1, cap: float = 30.0) -> float:
        """Re-add after an exponential back-off that grows with the key's consecutive failures."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(cap, base * (2 ** failures))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset the key's back-off after a successful round."""
        self._failures.pop(key, None)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> K:
        """The next key; the caller must call done(key) when finished. Raises QueueShutDown."""
        while not self._items or self._shut_down:
            if self._shut_down:
                raise QueueShutDown()
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        key = self._items.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def shutdown(self) -> None:
        self._shut_down = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
