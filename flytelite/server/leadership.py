"""Leadership among replicas: one named lease in the `leaders` table, held by at most one replica at a time.

Some work must run in exactly one of the replicas that share a database (the scheduler: one process
decides which slots to launch). A replica takes the leadership when nobody holds it or its holder's lease
expired, and renews it while it lives, both in one conditional UPDATE: the database re-checks the
condition under the row's write lock, so of two replicas racing for it exactly one wins. A replica that
dies stops renewing and loses the leadership at expiry; one that stops cleanly releases it at once.

The database decides with the claiming replica's wall clock (`expires_at`), as the execution leases
(propeller/leases.py) do; the holder trusts its win only for part of the period on its own monotonic clock,
so a slow renewal or some clock skew between hosts does not leave two replicas both believing they lead.
This module never does the leader's work; it only says whether this replica may.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, or_, select, update
from sqlalchemy.exc import IntegrityError

from flytelite.context import Context
from flytelite.store.models import Leader
from flytelite.store.statements import changed_rows

log = logging.getLogger(__name__)

# The scheduler's leadership: the one replica that launches scheduled executions.
SCHEDULER = "scheduler"
# Renewals per lease period: a leader whose renewal fails once or twice still holds the leadership.
RENEWALS_PER_PERIOD = 4


@dataclass(frozen=True)
class LeaderState:
    """Who holds a leadership now, as the database says."""

    name: str
    owner: str
    acquired_at: datetime
    expires_at: datetime


class Leadership:
    """One replica's claim on one named leadership, renewed every `seconds / RENEWALS_PER_PERIOD`."""

    def __init__(self, ctx: Context, name: str, owner: str, seconds: float):
        if seconds <= 0:
            raise ValueError(f"the {name!r} leadership needs a lease period of more than 0 seconds, not {seconds}")
        self.ctx, self.name, self.owner, self.seconds = ctx, name, owner, seconds
        # Monotonic time until which this replica may act as the leader (None: it does not lead).
        self._trusted_until: float | None = None
        # What the last acquire() found, to log when the leadership changes hands.
        self._won_last = False
        self._row_exists = False

    @property
    def renew_seconds(self) -> float:
        return self.seconds / RENEWALS_PER_PERIOD

    def held(self) -> bool:
        """True while this replica leads: its last renewal won, recently enough to trust."""
        until = self._trusted_until
        return until is not None and self.ctx.clock.monotonic() < until

    def acquire(self) -> bool:
        """Take the leadership if it is free or expired, or renew it if this replica holds it; True if held.

        One conditional UPDATE decides; the row is created first if missing (a concurrent creation is fine).
        """
        started = self.ctx.clock.monotonic()
        now = self.ctx.clock.now()
        if not self._row_exists:
            self._create_row()
        row = Leader
        claimable = or_(row.owner == self.owner, row.owner.is_(None), row.expires_at < now)
        with self.ctx.db.session() as s:
            won = changed_rows(
                s, update(row).where(row.name == self.name, claimable)
                .values(owner=self.owner, expires_at=now + timedelta(seconds=self.seconds),
                        acquired_at=case((row.owner == self.owner, row.acquired_at), else_=now))
                .execution_options(synchronize_session=False)
            ) == 1
        # The database counts the period from `now`; trusting it a renewal less leaves room for a renewal
        # that comes late and for clocks that disagree a little between hosts.
        self._trusted_until = started + self.seconds - self.renew_seconds if won else None
        if won and not self._won_last:
            log.info("replica %s now leads %r (lease %.1f s)", self.owner, self.name, self.seconds)
        elif self._won_last and not won:
            holder = leader_of(self.ctx, self.name, now)
            log.warning("replica %s lost the %r leadership to %s; it stops until it wins it again",
                        self.owner, self.name, holder.owner if holder else "nobody")
        self._won_last = won
        return won

    def release(self) -> None:
        """Give the leadership up (a clean stop), so another replica may take it at once."""
        self._trusted_until = None
        self._won_last = False
        with self.ctx.db.session() as s:
            s.execute(update(Leader).where(Leader.name == self.name, Leader.owner == self.owner)
                      .values(owner=None, expires_at=None, acquired_at=None)
                      .execution_options(synchronize_session=False))

    async def campaign(self, stopping: asyncio.Event) -> None:
        """Acquire or renew every `renew_seconds` until `stopping` is set, then release."""
        while not stopping.is_set():
            try:
                await asyncio.to_thread(self.acquire)
            except Exception:  # noqa: BLE001 - the next renewal may succeed; held() lapses meanwhile
                log.exception("renewing the %r leadership of replica %s failed; retrying in %.1f s",
                              self.name, self.owner, self.renew_seconds)
            try:
                await asyncio.wait_for(stopping.wait(), timeout=self.renew_seconds)
            except asyncio.TimeoutError:
                pass
        try:
            await asyncio.to_thread(self.release)
        except Exception:  # noqa: BLE001 - it then expires instead
            log.exception("releasing the %r leadership of replica %s failed; another replica takes it "
                          "within %.1f s", self.name, self.owner, self.seconds)

    def _create_row(self) -> None:
        # Insert without looking first: on SQLite a transaction that read before writing cannot wait for
        # a concurrent writer, it fails at once; an insert waits, then meets the row as an IntegrityError.
        try:
            with self.ctx.db.session() as s:
                s.add(Leader(name=self.name))
        except IntegrityError:
            pass  # it exists (created by this replica earlier or by another one)
        self._row_exists = True


def leader_of(ctx: Context, name: str, now: datetime) -> LeaderState | None:
    """The replica holding leadership `name` at `now`, or None if nobody does (free, released or expired)."""
    with ctx.db.session() as s:
        row = s.scalar(select(Leader).where(Leader.name == name, Leader.owner.is_not(None),
                                            Leader.expires_at >= now))
    if row is None:
        return None
    owner, acquired_at, expires_at = row.owner, row.acquired_at, row.expires_at
    # The query leaves no NULL owner or expiry, and a claim sets all three together.
    assert owner is not None and acquired_at is not None and expires_at is not None
    return LeaderState(row.name, owner, _utc(acquired_at, now), _utc(expires_at, now))


def _utc(at: datetime, like: datetime) -> datetime:
    # SQLite returns naive datetimes for timezone-aware columns; every time flytelite writes is UTC.
    return at.replace(tzinfo=like.tzinfo) if at.tzinfo is None and like.tzinfo is not None else at
