"""Statements with needs of their own: writes whose caller needs to know how many rows they changed
(compare-and-swap, leases, claims), and a hot read run on the database driver's own connection."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Dialect, Executable, Select
from sqlalchemy.orm import Session


def changed_rows(session: Session, statement: Executable, params: dict[str, Any] | None = None) -> int:
    """Execute an UPDATE or DELETE in `session` (with bound `params`); the number of rows it matched."""
    # Session.execute is typed as returning a Result; for an UPDATE or DELETE it is a CursorResult, the
    # cast SQLAlchemy's documentation gives for reading its rowcount.
    return cast("CursorResult[Any]", session.execute(statement, params)).rowcount


class DriverQuery:
    """A SELECT compiled once for a dialect and run on the driver's connection (sqlite3's, psycopg's) under a
    SQLAlchemy connection: SQLAlchemy's own execution (binding, result rows) of a one-row read is most of its
    cost, which a round that starts the next task waits for. Only for statements whose parameters and columns need no SQLAlchemy type processing."""

    def __init__(self, statement: Select, dialect: Dialect):
        compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string
        self.row: Any = namedtuple("Row", statement.selected_columns.keys())  # type: ignore[misc]  # names known at run time
        # The order of a positional paramstyle's (qmark: SQLite) parameters; None: named (psycopg's pyformat).
        self.order = tuple(compiled.positiontup) if compiled.positional and compiled.positiontup else None

    def one_or_none(self, connection: Connection, params: dict[str, Any]) -> Any:
        """The row (its columns as attributes), or None."""
        args = tuple(params[name] for name in self.order) if self.order is not None else params
        driver = connection.connection.driver_connection
        assert driver is not None
        row = driver.execute(self.sql, args).fetchone()
        return None if row is None else self.row._make(row)
