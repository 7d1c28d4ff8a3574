"""Engine wake-ups across replicas: PostgreSQL's LISTEN/NOTIFY.

Admin wakes the engine when it creates an execution, sets a signal or terminates one. In one process
that is a direct call; with several replicas on PostgreSQL the request may reach a replica that does not
drive the execution (or runs no engine at all), so the wake-up also goes out as a NOTIFY on one channel,
and every engine replica LISTENs and queues the execution: the one holding its lease (or the first to
claim a new one) acts within milliseconds instead of at its next resync. SQLite has no such channel; its
replicas rely on the resync (engine.resync_seconds).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import text

from flytelite.context import Context, ExecutionKey

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)
CHANNEL = "flytelite_engine"


def publisher(ctx: Context, local: Callable[[ExecutionKey], None] | None) -> Callable[[ExecutionKey], None]:
    """What admin calls to wake the engine: the local engine at once (if this replica runs one), and on
    PostgreSQL every engine replica through NOTIFY."""
    if ctx.db.is_sqlite:
        return local or (lambda _key: None)

    def notify(key: ExecutionKey) -> None:
        if local is not None:
            local(key)
        try:
            with ctx.db.session() as s:
                s.execute(text("SELECT pg_notify(:channel, :payload)"),
                          {"channel": CHANNEL, "payload": json.dumps(list(key))})
        except Exception:  # noqa: BLE001 - the engines' resync finds the execution anyway
            log.exception("NOTIFY for execution %s failed", "/".join(key))

    return notify


class Listener:
    """A thread that LISTENs on its own connection and hands each notified execution to `on_key`."""

    def __init__(self, ctx: Context, on_key: Callable[[ExecutionKey], None]):
        self.ctx, self.on_key = ctx, on_key
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pg-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception:  # noqa: BLE001 - reconnect; the resync covers what was missed meanwhile
                log.exception("LISTEN %s failed; reconnecting", CHANNEL)
                self._stop.wait(1.0)

    def _listen(self) -> None:
        raw = self.ctx.db.engine.raw_connection()
        try:
            # Only PostgreSQL replicas listen: the driver's connection is psycopg's own.
            conn = cast("psycopg.Connection[Any]", raw.driver_connection)
            conn.autocommit = True
            conn.execute(f"LISTEN {CHANNEL}")
            self.ready.set()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=1.0):
                    try:
                        self.on_key(ExecutionKey(*json.loads(note.payload)))
                    except (ValueError, TypeError):
                        log.warning("ignoring a malformed notification on %s: %r", CHANNEL, note.payload)
        finally:
            raw.detach()
            raw.close()
