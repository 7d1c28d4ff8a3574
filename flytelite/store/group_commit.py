"""Group commit: the inserts of concurrent callers in one transaction, each caller answered once it committed.

A thousand CreateExecution calls at once would otherwise each open a transaction of their own and queue
for SQLite's one write lock in its busy handler, which sleeps (1 ms, growing to 100 ms) instead of waking
when the lock frees, while the threads also fight over the GIL. Here the first caller to find no batch in
flight leads: it inserts every row queued so far in one transaction, one multi-row INSERT per table, and
commits it; the callers that queued meanwhile wait, and the next of them leads what queued behind. Nobody
returns before the transaction holding its rows committed, so a reply sent after insert() survives a crash
as a lone commit would.

A batch that raises is rolled back and its callers' rows inserted again one transaction each, so rows that
fail (a duplicate key) raise in their own caller only. A caller with a session open inserts alone (its
transaction may hold locks the batch would wait for).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from flytelite.store.db import Database

# Callers per transaction: bounds how long one transaction holds the write lock, and its size.
MAX_BATCH = 200

# Rows to insert, in order (a row's table, its columns): rows a later one refers to come first.
Rows = Sequence[tuple[Table, dict[str, Any]]]


@dataclass
class _Queued:
    rows: Rows
    done: bool = False
    error: BaseException | None = None


class GroupCommit:
    def __init__(self, db: Database, max_batch: int = MAX_BATCH):
        self._db = db
        self._max = max_batch
        self._queue_lock = threading.Lock()
        self._queue: list[_Queued] = []
        # Held by the caller committing a batch; the others wait on it, then find their rows done or lead.
        self._leading = threading.Lock()
        self._waiting = 0
        self.batches = 0

    @property
    def waiting(self) -> int:
        """Callers in insert() now: each waits to reply to someone (the engine yields to them, see engine.py)."""
        return self._waiting

    def insert(self, rows: Rows) -> None:
        """Insert `rows` in a transaction shared with concurrent callers; return once it committed.
        Raises what inserting them raised in a transaction of their own."""
        if self._db.session_depth():
            # Inside a session (its transaction may hold locks a batch would wait for): commit alone, as before.
            with self._db.session() as session:
                _insert(session, [rows])
            return
        mine = _Queued(rows)
        with self._queue_lock:
            self._queue.append(mine)
            self._waiting += 1
        try:
            with self._leading:
                while not mine.done:
                    with self._queue_lock:
                        batch, self._queue = self._queue[:self._max], self._queue[self._max:]
                    self._commit(batch)
        finally:
            with self._queue_lock:
                self._waiting -= 1
        if mine.error is not None:
            raise mine.error

    def _commit(self, batch: list[_Queued]) -> None:
        try:
            try:
                with self._db.priority(), self._db.session() as session:
                    _insert(session, [queued.rows for queued in batch])
                self.batches += 1
            except Exception as exc:  # noqa: BLE001 - each caller then meets its own error
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    for queued in batch:
                        queued.error = self._alone(queued)
        except BaseException as exc:
            # Interrupted: no caller of the batch may take its rows for committed.
            for queued in batch:
                queued.error = queued.error or exc
            raise
        finally:
            for queued in batch:
                queued.done = True

    def _alone(self, queued: _Queued) -> Exception | None:
        try:
            with self._db.session() as session:
                _insert(session, [queued.rows])
        except Exception as exc:  # noqa: BLE001 - raised in the caller's thread
            return exc
        return None


def _insert(session: Session, batch: list[Rows]) -> None:
    """One executemany INSERT per table, tables in the order their first rows came."""
    by_table: dict[Table, list[dict]] = {}
    for rows in batch:
        for table, columns in rows:
            by_table.setdefault(table, []).append(columns)
    for table, values in by_table.items():
        session.execute(insert(table), values)
