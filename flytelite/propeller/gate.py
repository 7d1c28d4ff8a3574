"""The round gate: the engine's rounds run one at a time, unless one is waiting on something else.

A round is Python work broken by many short calls that let go of the GIL: every SQLite statement, every
file read or written. When several rounds run at once in this process's threads, each such call hands
the GIL to another thread and back, and those hand-overs cost more than the rounds gain by overlapping.
With 1,000 concurrent executions on SQLite, 8 workers made 840 futex calls per execution against 74
with 1 worker, and spent about 40% more CPU on the same rounds.

The workers stay, because a round can also wait on the network (an agent's reply, S3, the Kubernetes
API, a distant PostgreSQL), and others must go on meanwhile. So a round starts only when no other round
started less than `fresh_seconds` ago is still running. A round that runs longer than that is taken to
be waiting, and the next one may start beside it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
# Longer than a round's own work (a few milliseconds); short enough that a waiting round holds up the
# others only briefly.
FRESH_SECONDS = 0.02


class RoundGate:
    def __init__(self, fresh_seconds: float = FRESH_SECONDS):
        self._fresh = fresh_seconds
        self._cond = threading.Condition(threading.Lock())
        self._started: dict[int, float] = {}  # running calls: when each started (time.monotonic)
        self._tokens = itertools.count()

    def run(self, fn: Callable[..., T], *args) -> T:
        """Call `fn(*args)` once no call started less than `fresh_seconds` ago is running."""
        with self._cond:
            while self._started:
                young_for = self._fresh - (time.monotonic() - max(self._started.values()))
                if young_for <= 0:
                    break
                self._cond.wait(young_for)
            token = next(self._tokens)
            self._started[token] = time.monotonic()
        try:
            return fn(*args)
        finally:
            with self._cond:
                del self._started[token]
                self._cond.notify()
