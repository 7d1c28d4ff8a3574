"""Writes whose caller needs to know how many rows they changed (compare-and-swap, leases, claims)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Executable
from sqlalchemy.orm import Session


def changed_rows(session: Session, statement: Executable, params: dict[str, Any] | None = None) -> int:
    """Execute an UPDATE or DELETE in `session` (with bound `params`); the number of rows it matched."""
    # Session.execute is typed as returning a Result; for an UPDATE or DELETE it is a CursorResult, the
    # cast SQLAlchemy's documentation gives for reading its rowcount.
    return cast("CursorResult[Any]", session.execute(statement, params)).rowcount
