"""The notification outbox: e-mails kept in the database from the moment an execution's phase asks for them
until they are sent, so a restart or an SMTP outage loses none (FlyteAdmin hands them to a queue instead).

`enqueue` runs inside the transaction that records the phase. A sender claims due rows one by one with a
conditional UPDATE (as the execution leases of propeller/leases.py do), so of several replicas exactly one
sends each mail; a claim whose replica died expires after `CLAIM_SECONDS` and the mail is sent again
(at least once, never lost). This module never talks to a mail server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flyteidl.admin import notification_pb2
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from flytelite.config import NotificationsConfig
from flytelite.context import Context
from flytelite.store.db import as_utc
from flytelite.store.models import NotificationOutbox
from flytelite.store.statements import changed_rows

# How long a claimed mail stays with its sender before another replica may take it.
CLAIM_SECONDS = 120.0
# Most mails one claim takes.
BATCH = 50


@dataclass(frozen=True)
class PendingMail:
    id: int
    execution: str
    message: notification_pb2.EmailMessage
    attempts: int
    created_at: datetime


def enqueue(session: Session, project: str, domain: str, name: str, phase: int,
            messages: list[notification_pb2.EmailMessage], now: datetime) -> None:
    for message in messages:
        session.add(NotificationOutbox(
            project=project, domain=domain, execution_name=name, phase=phase,
            message_pb=message.SerializeToString(), created_at=now, attempts=0, next_attempt_at=now,
            last_error="", claimed_by=None, claimed_until=None, sent_at=None, given_up_at=None))


def _due(now: datetime):
    row = NotificationOutbox
    return (row.sent_at.is_(None), row.given_up_at.is_(None), row.next_attempt_at <= now,
            or_(row.claimed_until.is_(None), row.claimed_until < now))


def claim_due(ctx: Context, owner: str, now: datetime) -> list[PendingMail]:
    """Take up to BATCH due mails for `owner`; a mail another replica claims first is skipped."""
    row = NotificationOutbox
    with ctx.db.session() as s:
        ids = s.scalars(select(row.id).where(*_due(now)).order_by(row.id).limit(BATCH)).all()
    claimed = []
    for mail_id in ids:
        with ctx.db.session() as s:
            won = changed_rows(s, update(row).where(row.id == mail_id, *_due(now))
                               .values(claimed_by=owner, claimed_until=now + timedelta(seconds=CLAIM_SECONDS))
                               .execution_options(synchronize_session=False)) == 1
            if won:
                r = s.get(row, mail_id)
                assert r is not None, "the row this replica just claimed"
                claimed.append(PendingMail(r.id, f"{r.project}/{r.domain}/{r.execution_name}",
                                           notification_pb2.EmailMessage.FromString(r.message_pb), r.attempts,
                                           as_utc(r.created_at)))
    return claimed


def mark_sent(ctx: Context, mail: PendingMail, owner: str, now: datetime) -> None:
    row = NotificationOutbox
    with ctx.db.session() as s:
        s.execute(update(row).where(row.id == mail.id, row.claimed_by == owner)
                  .values(sent_at=now, attempts=mail.attempts + 1, last_error="", claimed_by=None,
                          claimed_until=None).execution_options(synchronize_session=False))


def mark_failed(ctx: Context, mail: PendingMail, owner: str, now: datetime, error: str, permanent: bool,
                config: NotificationsConfig) -> datetime | None:
    """Record a failed attempt; returns when the next one is due, or None if the mail is given up."""
    attempts = mail.attempts + 1
    delay = min(config.retry_seconds * 2 ** (attempts - 1), config.max_retry_seconds)
    next_at = now + timedelta(seconds=delay)
    expired = config.give_up_seconds and next_at > mail.created_at + timedelta(seconds=config.give_up_seconds)
    give_up = permanent or bool(expired)
    row = NotificationOutbox
    with ctx.db.session() as s:
        s.execute(update(row).where(row.id == mail.id, row.claimed_by == owner)
                  .values(attempts=attempts, last_error=error[:2000], next_attempt_at=next_at, claimed_by=None,
                          claimed_until=None, given_up_at=now if give_up else None)
                  .execution_options(synchronize_session=False))
    return None if give_up else next_at


def pending_count(ctx: Context) -> int:
    """Mails neither sent nor given up (for tests and logs)."""
    row = NotificationOutbox
    with ctx.db.session() as s:
        return len(s.scalars(select(row.id).where(row.sent_at.is_(None), row.given_up_at.is_(None))).all())
