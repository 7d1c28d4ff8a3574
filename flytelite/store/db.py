"""Database access: one engine, short sessions, migrations to head on start (or by `flytelite db upgrade`).

SQLite (the default, a file under the home) and PostgreSQL (`postgresql+psycopg://...`, psycopg 3)
run the same schema and queries; what differs between them is set up here and nowhere else. A value the
database refuses (PostgreSQL's text cannot hold NUL, its integers are 32 or 64 bits) came from a request:
it is InvalidArgument, on both.
"""

from __future__ import annotations

import fcntl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, overload

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.exc import DataError
from sqlalchemy.orm import Session, sessionmaker

from flytelite.errors import InvalidArgument
from flytelite.store.group_commit import GroupCommit
from flytelite.store.writer_lock import WriterLock

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# How long a SQLite write waits for another connection's transaction before failing with "database is locked".
_SQLITE_BUSY_SECONDS = 30
# The PostgreSQL advisory lock that serialises schema migrations ("flyt" in ASCII).
_MIGRATION_LOCK_KEY = 0x666C7974
_MIGRATING = threading.Lock()


class Database:
    def __init__(self, url: str, connect_retry_seconds: float = 0.0):
        """`connect_retry_seconds`: how long opening a PostgreSQL connection keeps trying while the server
        refuses (a restart), before the error reaches the caller."""
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict = {}
        self._local = threading.local()
        self.writer: WriterLock | None = None
        if self.is_sqlite:
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": _SQLITE_BUSY_SECONDS}
            self.writer = WriterLock(_SQLITE_BUSY_SECONDS, self.session_depth)
            # The connection used last, whose page cache is likely still valid: SQLite drops a connection's
            # cache whenever another connection wrote since its last transaction (with 1,000 concurrent
            # executions, a fifth fewer read calls).
            kwargs["pool_use_lifo"] = True
        elif url.startswith("postgresql"):
            # Times come back in UTC whatever the server's TimeZone (SQLite hands back the UTC we stored);
            # pre-ping drops connections the server closed (restart, idle timeout) instead of failing a request.
            kwargs["connect_args"] = {"options": "-c timezone=UTC"}
            kwargs["pool_pre_ping"] = True
        self.engine = create_engine(url, future=True, **kwargs)
        if not self.is_sqlite and connect_retry_seconds > 0:
            event.listen(self.engine, "do_connect", _retrying_connect(connect_retry_seconds))
        if self.writer is not None:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "before_cursor_execute", self.writer.before_execute)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False, future=True)
        # Writes of concurrent callers committed in shared transactions (group_commit.py).
        self.group_commit = GroupCommit(self)

    def time_queries(self, observe: Callable[[float], None]) -> None:
        """Call `observe(milliseconds)` after every statement the database ran (metrics)."""
        def before(_conn, _cursor, _statement, _parameters, context, _executemany) -> None:
            context._flytelite_started = time.perf_counter()

        def after(_conn, _cursor, _statement, _parameters, context, _executemany) -> None:
            started = getattr(context, "_flytelite_started", None)
            if started is not None:
                observe((time.perf_counter() - started) * 1000.0)

        event.listen(self.engine, "before_cursor_execute", before)
        event.listen(self.engine, "after_cursor_execute", after)

    def trace_statements(self, start: Callable[[str, dict], Any]) -> None:
        """A span around every statement: `start(name, attributes)` returns one to end, or None (tracing)."""
        system = self.engine.dialect.name

        def before(_conn, _cursor, statement, _parameters, context, _executemany) -> None:
            verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
            context._flytelite_span = start(f"db {verb}", {"db.system": system, "db.statement": statement[:500]})

        def after(_conn, _cursor, _statement, _parameters, context, _executemany) -> None:
            span = getattr(context, "_flytelite_span", None)
            if span is not None:
                span.end()

        def failed(exception_context) -> None:
            span = getattr(exception_context.execution_context, "_flytelite_span", None)
            if span is not None:
                span.record_exception(exception_context.original_exception)
                span.end()

        event.listen(self.engine, "before_cursor_execute", before)
        event.listen(self.engine, "after_cursor_execute", after)
        event.listen(self.engine, "handle_error", failed)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        session = self._sessions()
        depth = self._local.depth = self.session_depth() + 1
        try:
            yield session
            session.commit()
        except DataError as exc:
            session.rollback()
            reason = str(exc.orig).splitlines()[0] if exc.orig is not None else str(exc)
            raise InvalidArgument(f"the database cannot take a value of this request: {reason}; text must not "
                                  "contain NUL characters and numbers must fit their field") from None
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()
            if self.writer is not None:
                self.writer.session_ended(depth)
            self._local.depth = depth - 1

    def reading(self) -> AbstractContextManager[Connection]:
        """A connection for statements that only read: no ORM session's bookkeeping around them, which made
        a session's read of one row take twice as long as the statement on a bare connection."""
        return self.engine.connect()

    def priority(self) -> AbstractContextManager[None]:
        """Sessions of this thread in the block write before others waiting to (SQLite; no-op on PostgreSQL)."""
        return self.writer.priority() if self.writer is not None else nullcontext()

    def session_depth(self) -> int:
        """How many sessions this thread has open (nested ones count)."""
        return getattr(self._local, "depth", 0)

    def migrate(self) -> tuple[str | None, str]:
        """Bring the schema to the newest revision this flytelite knows; (revision before, revision now).
        A schema newer than that is refused (SchemaMismatch): an older release cannot know what it holds."""
        from alembic import command

        with self._migration_lock():
            before = self.schema_revision()
            self._known(before)
            command.upgrade(_alembic_config(self.engine), "head")
        return before, newest_revision()

    @contextmanager
    def _migration_lock(self) -> Iterator[None]:
        """One migration at a time: replicas starting together would each upgrade. The ones that wait then find
        the schema current. PostgreSQL: an advisory lock; SQLite: a lock file beside the database's file."""
        with _MIGRATING:  # Alembic's context is global to the process
            if not self.is_sqlite:
                with self.engine.connect() as conn:
                    conn.exec_driver_sql(f"SELECT pg_advisory_lock({_MIGRATION_LOCK_KEY})")
                    try:
                        yield
                    finally:
                        conn.exec_driver_sql(f"SELECT pg_advisory_unlock({_MIGRATION_LOCK_KEY})")
            elif self.engine.url.database and self.engine.url.database != ":memory:":
                with open(f"{self.engine.url.database}.migrate-lock", "a") as f:
                    fcntl.flock(f, fcntl.LOCK_EX)
                    yield
            else:
                yield

    def require_current(self) -> None:
        """Refuse a schema older or newer than this flytelite's (when it does not migrate on start)."""
        current, newest = self.schema_revision(), newest_revision()
        self._known(current)
        if current != newest:
            raise SchemaMismatch(f"the database {self.safe_url} is at schema revision {current or 'none (empty)'}; "
                                 f"this flytelite needs {newest}: run `flytelite db upgrade` with this "
                                 "configuration first (or set migrate_on_start: true)")

    def schema_revision(self) -> str | None:
        """The database's Alembic revision (None: no schema yet)."""
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def _known(self, revision: str | None) -> None:
        if revision is not None and revision not in known_revisions():
            raise SchemaMismatch(f"the database {self.safe_url} is at schema revision {revision}, newer than this "
                                 f"flytelite knows (its newest is {newest_revision()}): run the flytelite release "
                                 "that upgraded it, or restore a backup taken before the upgrade")

    @property
    def safe_url(self) -> str:
        """The URL without its password."""
        return self.engine.url.render_as_string(hide_password=True)

    def dispose(self) -> None:
        self.engine.dispose()


class SchemaMismatch(RuntimeError):
    """The database's schema is not the one this flytelite runs on (what to do is in the message)."""


def _alembic_config(engine=None):
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def _scripts():
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config())


def newest_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None, "the migrations have one head"
    return head


def known_revisions() -> set[str]:
    return {script.revision for script in _scripts().walk_revisions()}


def _retrying_connect(seconds: float) -> Callable[..., Any]:
    """A connect that tries again, every quarter second for `seconds`, while the server cannot be reached."""
    def connect(dialect, _record, cargs, cparams):
        deadline = time.monotonic() + seconds
        while True:
            try:
                return dialect.connect(*cargs, **cparams)
            except dialect.loaded_dbapi.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.25)

    return connect


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets the API read while the engine writes; NORMAL sync is durable across process crashes.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    # LIKE (the `contains` filter) matches case as PostgreSQL's does, and as FlyteAdmin's on PostgreSQL.
    cursor.execute("PRAGMA case_sensitive_like=ON")
    cursor.close()


@overload
def as_utc(dt: datetime) -> datetime: ...
@overload
def as_utc(dt: None) -> None: ...
@overload
def as_utc(dt: datetime | None) -> datetime | None: ...


def as_utc(dt: datetime | None) -> datetime | None:
    """SQLite hands datetimes back without their zone; every stored time is UTC."""
    if dt is None or dt.tzinfo is not None:
        return dt
    return dt.replace(tzinfo=timezone.utc)
