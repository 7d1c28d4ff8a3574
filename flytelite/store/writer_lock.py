"""One SQLite writer at a time in this process, handed over by a lock instead of SQLite's busy handler.

SQLite lets one transaction write at a time. A connection that finds the write lock taken waits in the
busy handler, which sleeps 1, 2, 5 ... up to 100 ms between tries and is never woken when the lock frees:
with the API's and the engine's threads all writing, the lock often sat free while every writer slept.
Here a session takes this process's writer lock just before its first write statement (pysqlite opens
the transaction at that statement) and gives it back once the session committed or rolled back, so the
next writer starts the moment the previous one is done.

It only orders this process's writers: SQLite's own lock still decides between processes, and keeps
everything correct if a write bypasses this lock. A wait longer than SQLite's busy timeout goes ahead
without the lock rather than waiting for ever. Sessions are per thread, and so is the bookkeeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Statements that never take SQLite's write lock (everything else is treated as a write).
_READS = ("SELECT", "PRAGMA")


class WriterLock:
    def __init__(self, timeout: float, depth: Callable[[], int]):
        """`depth` tells how many sessions this thread has open (0: not in a session)."""
        self._timeout = timeout
        self._depth = depth
        self._local = threading.local()
        self._cond = threading.Condition(threading.Lock())
        self._held = False
        # Threads waiting with priority (group commit's leaders: callers wait for their reply).
        self._urgent = 0

    @contextmanager
    def priority(self) -> Iterator[None]:
        """Writes of this thread in the block go before waiting writers without priority."""
        self._local.urgent = True
        try:
            yield
        finally:
            self._local.urgent = False

    def before_execute(self, _conn, _cursor, statement: str, *_args) -> None:
        """SQLAlchemy's before_cursor_execute: take the lock before a session's first write."""
        depth = self._depth()
        if not depth or getattr(self._local, "held_at", None) is not None:
            return  # outside a session (migrations), or this thread holds it already
        if statement.lstrip()[:6].upper().startswith(_READS):
            return
        if self._acquire(getattr(self._local, "urgent", False)):
            self._local.held_at = depth

    def session_ended(self, depth: int) -> None:
        """After a session's commit or rollback: give the lock back if that session took it."""
        if getattr(self._local, "held_at", None) == depth:
            self._local.held_at = None
            with self._cond:
                self._held = False
                self._cond.notify_all()

    def _acquire(self, urgent: bool) -> bool:
        deadline = time.monotonic() + self._timeout
        with self._cond:
            self._urgent += urgent
            try:
                while self._held or (self._urgent and not urgent):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                self._held = True
                return True
            finally:
                self._urgent -= urgent
