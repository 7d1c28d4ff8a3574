"""The device-code grant's shared state (RFC 8628): what a device asked for, and what the person who read its
user code answered. Kept in the database, so the replica a device polls need not be the one the person used."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete

from flytelite.idl.times import Clock
from flytelite.store.db import Database, as_utc
from flytelite.store.models import DeviceGrant

# RFC 8628 6.1: letters people do not misread, no vowels (no words); 8 of them, shown as XXXX-XXXX.
USER_CODE_LETTERS = "BCDFGHJKLMNPQRSTVWXZ"
PENDING, APPROVED, DENIED = "pending", "approved", "denied"


def new_user_code() -> str:
    code = "".join(secrets.choice(USER_CODE_LETTERS) for _ in range(8))
    return f"{code[:4]}-{code[4:]}"


def normalize(user_code: str) -> str:
    """A user code as a person may type it: any case, with or without the dash or spaces."""
    letters = "".join(c for c in user_code.upper() if c.isalpha())
    return f"{letters[:4]}-{letters[4:]}"


@dataclass(frozen=True)
class Request:
    client_id: str
    scopes: str


@dataclass(frozen=True)
class Answer:
    outcome: str
    subject: str = ""
    groups: tuple[str, ...] = ()


class DeviceGrants:
    def __init__(self, db: Database, clock: Clock):
        self.db, self.clock = db, clock

    def open(self, client_id: str, scopes: str, seconds: int) -> str:
        """A new pending grant; its user code."""
        now = self.clock.now()
        code = new_user_code()
        with self.db.session() as s:
            s.execute(delete(DeviceGrant).where(DeviceGrant.expires_at < now))
            s.add(DeviceGrant(user_code=code, client_id=client_id, scopes=scopes, outcome=PENDING, subject="",
                              groups="[]", expires_at=now + timedelta(seconds=seconds)))
        return code

    def pending(self, user_code: str) -> Request | None:
        """What the device behind a user code asked for, while nobody answered and it has not expired."""
        with self.db.session() as s:
            row = s.get(DeviceGrant, normalize(user_code))
            if row is None or row.outcome != PENDING or self._expired(row):
                return None
            return Request(row.client_id, row.scopes)

    def answer(self, user_code: str, subject: str, groups: tuple[str, ...], approve: bool) -> bool:
        """Record a person's answer; False when the code names no pending grant."""
        with self.db.session() as s:
            row = s.get(DeviceGrant, normalize(user_code))
            if row is None or row.outcome != PENDING or self._expired(row):
                return False
            row.outcome, row.subject, row.groups = (APPROVED if approve else DENIED), subject, json.dumps(groups)
            return True

    def take(self, user_code: str) -> Answer | None:
        """The answer for the device (removed once taken); Answer(PENDING) while there is none; None when the
        grant does not exist or has expired."""
        with self.db.session() as s:
            row = s.get(DeviceGrant, user_code)
            if row is None or self._expired(row):
                return None
            if row.outcome == PENDING:
                return Answer(PENDING)
            s.delete(row)
            return Answer(row.outcome, row.subject, tuple(json.loads(row.groups)))

    def _expired(self, row: DeviceGrant) -> bool:
        return as_utc(row.expires_at) <= self.clock.now()
