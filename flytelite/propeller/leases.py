"""Which engine replica drives which execution: a lease per execution, kept in the FlyteWorkflow row.

Several flytelite processes may share one database. As FlytePropeller shards workflows so that one
propeller owns each, an execution is evaluated only by the replica holding its lease (`lease_owner`
until `lease_expires_at`). A replica claims free executions (no owner, or a lease that expired) and
renews its own in the same conditional UPDATE, so two replicas never both win a row: the database
re-checks the condition under the row's write lock. A replica that dies stops renewing; its leases
expire and the others take its executions over. A clean stop releases them at once. Every status write
is fenced by the lease (see WorkflowExecutor._persist): a replica that lost a lease cannot overwrite
what the new owner wrote. A task process, a side effect no fence stops, is started only while the lease
lasts a third of a period more (`holds`, asked by WorkflowExecutor._may_launch): the new owner looks for
the processes the old one started only after the lease expired, by when such a start is long done. With
one replica (the default) every lease is simply its own.

Sharing: when a replica sweeps for free executions (at start and at each resync) it takes no more than
its share of the unfinished ones, the count divided by the live engine replicas the composition root
reports (`peers`), so the executions of a replica that died spread over the survivors. Free rows are
picked with FOR UPDATE SKIP LOCKED, so replicas sweeping at once skip each other's picks. A wake-up for
one execution (a new one) claims it whatever the share: the first replica to react starts it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select, tuple_, update

from flytelite.context import Context, ExecutionKey
from flytelite.metrics import OWN
from flytelite.store.models import FlyteWorkflow


class LeaseLost(RuntimeError):
    """This replica no longer holds the lease of an execution it evaluated (another replica took it)."""


def _one_of(keys: list[ExecutionKey]):
    return tuple_(FlyteWorkflow.project, FlyteWorkflow.domain, FlyteWorkflow.name).in_(keys)


class Leases:
    def __init__(self, ctx: Context, owner: str, seconds: float, peers: Callable[[], int] | None = None):
        """`peers` counts the live engine replicas sharing the database (this one included); without it this
        replica takes every free execution."""
        self.ctx, self.owner, self.seconds, self.peers = ctx, owner, seconds, peers
        # Until when this replica holds each lease it took or renewed (as of its last claim).
        self._held_until: dict[ExecutionKey, datetime] = {}
        self._lock = threading.Lock()

    def claim(self, keys: list[ExecutionKey] | None = None) -> list[ExecutionKey]:
        """Take or renew the leases of unfinished executions that are free or already this replica's:
        only `keys`, or (a sweep) all of this replica's and its share of the free ones. Returns the
        executions this replica now holds among them."""
        if keys is not None:
            return self._update(_one_of(keys)) if keys else []
        now = self.ctx.clock.now()
        with self._lock:  # a sweep renews every lease still held: forget the others
            self._held_until = {k: until for k, until in self._held_until.items() if until > now}
        peers = self.peers() if self.peers is not None else 1
        if peers <= 1:
            return self._update(None)
        held = self._update(FlyteWorkflow.lease_owner == self.owner)
        others = or_(FlyteWorkflow.lease_owner.is_(None), FlyteWorkflow.lease_owner != self.owner)
        return held + self._update(others, limit=self._share(peers) - len(held))

    def holds(self, key: ExecutionKey, seconds: float) -> bool:
        """Whether this replica's lease on `key` lasts at least `seconds` more (as of its last claim)."""
        until = self._held_until.get(key)
        return until is not None and until - self.ctx.clock.now() >= timedelta(seconds=seconds)

    def _share(self, peers: int) -> int:
        with self.ctx.db.session() as s:
            unfinished = s.scalar(select(func.count()).select_from(FlyteWorkflow).where(FlyteWorkflow.done.is_(False)))
        return math.ceil((unfinished or 0) / peers)

    def _update(self, among, limit: int | None = None) -> list[ExecutionKey]:
        """One conditional UPDATE taking or renewing the claimable rows (`among` them; at most `limit` rows
        nobody else holds, picked with SKIP LOCKED)."""
        now = self.ctx.clock.now()
        row = FlyteWorkflow
        claimable = and_(row.done.is_(False),
                         or_(row.lease_owner.is_(None), row.lease_owner == self.owner, row.lease_expires_at < now))
        if among is not None:
            claimable = and_(claimable, among)
        with self.ctx.db.session() as s:
            if limit is not None:
                if limit <= 0:
                    return []
                picked = s.execute(select(row.project, row.domain, row.name).where(claimable)
                                   .order_by(row.created_at).limit(limit).with_for_update(skip_locked=True)).all()
                if not picked:
                    return []
                claimable = and_(claimable, _one_of([ExecutionKey(*p) for p in picked]))
            # Leases another replica let lapse without releasing them (it died or stalled): taken over below.
            lapsed = s.scalar(select(func.count()).select_from(row).where(
                claimable, row.lease_owner.is_not(None), row.lease_owner != self.owner))
            until = now + timedelta(seconds=self.seconds)
            claimed = [ExecutionKey(*r) for r in s.execute(
                update(row).where(claimable)
                .values(lease_owner=self.owner, lease_expires_at=until)
                .returning(row.project, row.domain, row.name)
                .execution_options(synchronize_session=False)
            )]
        with self._lock:
            self._held_until.update((key, until) for key in claimed)
        if lapsed:
            self.ctx.metrics.inc(f"{OWN}leases:takeovers", "Executions taken over from a replica whose lease lapsed",
                                 min(lapsed, len(claimed)))
        return claimed

    def release(self) -> None:
        """Give up every lease (a clean stop): other replicas may take the executions at once."""
        with self._lock:
            self._held_until.clear()
        with self.ctx.db.session() as s:
            s.execute(update(FlyteWorkflow).where(FlyteWorkflow.lease_owner == self.owner)
                      .values(lease_owner=None, lease_expires_at=None).execution_options(synchronize_session=False))

    def fence(self, statement):
        """`statement` (an UPDATE of FlyteWorkflow) restricted to rows no other replica holds: this one's, or
        ones nobody claimed (a replica only gives its leases up when it stops writing)."""
        return statement.where(self.unclaimed_or_mine())

    def unclaimed_or_mine(self):
        # The table's column, not the entity's: it keeps a Core statement (the status write) free of the ORM.
        owner = FlyteWorkflow.table().c.lease_owner
        return or_(owner.is_(None), owner == self.owner)

    def held_elsewhere(self, owner: str | None) -> bool:
        return owner is not None and owner != self.owner
