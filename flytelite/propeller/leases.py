"""Which engine replica drives which execution: a lease per execution, kept in the FlyteWorkflow row.

Several flytelite processes may share one database. As FlytePropeller shards workflows so that one
propeller owns each, an execution is evaluated only by the replica holding its lease (`lease_owner`
until `lease_expires_at`). A replica claims free executions (no owner, or a lease that expired) and
renews its own in the same conditional UPDATE, so two replicas never both win a row: the database
re-checks the condition under the row's write lock. A replica that dies stops renewing; its leases
expire and the others take its executions over. A clean stop releases them at once. Every status write
is fenced by the lease (see WorkflowExecutor._persist): a replica that lost a lease cannot overwrite
what the new owner wrote. With one replica (the default) every lease is simply its own.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import and_, or_, update

from flytelite.context import Context, ExecutionKey
from flytelite.store.models import FlyteWorkflow


class LeaseLost(RuntimeError):
    """This replica no longer holds the lease of an execution it evaluated (another replica took it)."""


class Leases:
    def __init__(self, ctx: Context, owner: str, seconds: float):
        self.ctx, self.owner, self.seconds = ctx, owner, seconds

    def claim(self, keys: list[ExecutionKey] | None = None) -> list[ExecutionKey]:
        """Take or renew the leases of unfinished executions (all of them, or only `keys`) that are free
        or already this replica's; returns the executions this replica now holds among them."""
        now = self.ctx.clock.now()
        row = FlyteWorkflow
        claimable = and_(row.done.is_(False),
                         or_(row.lease_owner.is_(None), row.lease_owner == self.owner, row.lease_expires_at < now))
        if keys is not None:
            if not keys:
                return []
            claimable = and_(claimable, or_(*(and_(row.project == k[0], row.domain == k[1], row.name == k[2])
                                              for k in keys)))
        with self.ctx.db.session() as s:
            claimed = s.execute(
                update(row).where(claimable)
                .values(lease_owner=self.owner, lease_expires_at=now + timedelta(seconds=self.seconds))
                .returning(row.project, row.domain, row.name)
                .execution_options(synchronize_session=False)
            ).all()
        return [tuple(r) for r in claimed]

    def release(self) -> None:
        """Give up every lease (a clean stop): other replicas may take the executions at once."""
        with self.ctx.db.session() as s:
            s.execute(update(FlyteWorkflow).where(FlyteWorkflow.lease_owner == self.owner)
                      .values(lease_owner=None, lease_expires_at=None).execution_options(synchronize_session=False))

    def fence(self, statement):
        """`statement` (an UPDATE of FlyteWorkflow) restricted to rows no other replica holds: this one's, or
        ones nobody claimed (a replica only gives its leases up when it stops writing)."""
        return statement.where(self.unclaimed_or_mine())

    def unclaimed_or_mine(self):
        return or_(FlyteWorkflow.lease_owner.is_(None), FlyteWorkflow.lease_owner == self.owner)

    def held_elsewhere(self, owner: str | None) -> bool:
        return owner is not None and owner != self.owner
