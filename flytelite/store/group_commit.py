"""Group commit: the writes of concurrent callers in one transaction, each caller answered once it committed.

A thousand CreateExecution calls at once would otherwise each open a transaction of their own and queue
for SQLite's one write lock in its busy handler, which sleeps (1 ms, growing to 100 ms) instead of waking
when the lock frees, while the threads also fight over the GIL. Here the first caller to find no batch in
flight leads: it runs every write queued so far in one transaction and commits it; the callers that queued
meanwhile wait, and the next of them leads what queued behind. Nobody returns before the transaction
holding its write committed, so a reply sent after write() survives a crash as a lone commit would.

A batch that raises is rolled back and its writes run again one transaction each, so a write that fails
(a duplicate key) raises in its own caller only. A write may therefore run twice: it must build its rows
afresh each time. A caller with a session open commits its write alone (its transaction may hold locks
the batch would wait for).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from flytelite.store.db import Database

# Writes per transaction: bounds how long one transaction holds the write lock (and the rows it holds).
MAX_BATCH = 200

Write = Callable[[Session], None]


@dataclass
class _Queued:
    write: Write
    done: bool = False
    error: BaseException | None = None


class GroupCommit:
    def __init__(self, db: Database, max_batch: int = MAX_BATCH):
        self._db = db
        self._max = max_batch
        self._queue_lock = threading.Lock()
        self._queue: list[_Queued] = []
        # Held by the caller committing a batch; the others wait on it, then find their write done or lead.
        self._leading = threading.Lock()
        self.batches = 0

    def write(self, write: Write) -> None:
        """Run `write(session)` in a transaction shared with concurrent callers; return once it committed.
        Raises what the write raised in a transaction of its own."""
        if self._db.session_depth():
            # Inside a session (its transaction may hold locks a batch would wait for): commit alone, as before.
            with self._db.session() as session:
                write(session)
            return
        mine = _Queued(write)
        with self._queue_lock:
            self._queue.append(mine)
        with self._leading:
            while not mine.done:
                with self._queue_lock:
                    batch, self._queue = self._queue[:self._max], self._queue[self._max:]
                self._commit(batch)
        if mine.error is not None:
            raise mine.error

    def _commit(self, batch: list[_Queued]) -> None:
        try:
            try:
                with self._db.priority(), self._db.session() as session:
                    for queued in batch:
                        queued.write(session)
                self.batches += 1
            except Exception as exc:  # noqa: BLE001 - each write then meets its own error
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    for queued in batch:
                        queued.error = self._alone(queued)
        except BaseException as exc:
            # Interrupted: no write of the batch may pass for committed.
            for queued in batch:
                queued.error = queued.error or exc
            raise
        finally:
            for queued in batch:
                queued.done = True

    def _alone(self, queued: _Queued) -> Exception | None:
        try:
            with self._db.session() as session:
                queued.write(session)
        except Exception as exc:  # noqa: BLE001 - raised in the caller's thread
            return exc
        return None
