"""The replicas table: every running flytelite process reports itself there and keeps a heartbeat.

`flytelite status` reads it with the engine's leases and the scheduler's leadership, so an operator sees
which processes share the database, what each runs, which executions each drives and which one launches
scheduled executions. A replica that stops cleanly removes its row; one that dies leaves a row whose
heartbeat grows old (its leases expire meanwhile).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update

from flytelite.context import Context
from flytelite.server.leadership import SCHEDULER, leader_of
from flytelite.store.models import FlyteWorkflow, Replica

# Roles whose replicas run an engine (config.ROLES).
ENGINE_ROLES = ("all", "engine")


class ReplicaRegistry:
    def __init__(self, ctx: Context, replica_id: str, role: str):
        self.ctx, self.id, self.role = ctx, replica_id, role

    def register(self, address: str) -> None:
        """Add this replica's row; `address` is its public URL ("" for an engine replica, which has no port)."""
        now = self.ctx.clock.now()
        with self.ctx.db.session() as s:
            s.merge(Replica(id=self.id, host=self.ctx.config.engine.machine, pid=os.getpid(), role=self.role,
                            address=address, started_at=now, heartbeat_at=now))

    def heartbeat(self, queue_depth: int = 0) -> None:
        with self.ctx.db.session() as s:
            s.execute(update(Replica).where(Replica.id == self.id)
                      .values(heartbeat_at=self.ctx.clock.now(), queue_depth=queue_depth))

    def live_engines(self) -> int:
        """Engine replicas on this database whose heartbeat is younger than a lease, this one included."""
        cfg = self.ctx.config.engine
        since = self.ctx.clock.now() - timedelta(seconds=cfg.lease_seconds)
        with self.ctx.db.session() as s:
            others = s.scalar(select(func.count()).select_from(Replica).where(
                Replica.id != self.id, Replica.role.in_(ENGINE_ROLES), Replica.heartbeat_at >= since)) or 0
        return others + 1

    def deregister(self) -> None:
        with self.ctx.db.session() as s:
            s.execute(delete(Replica).where(Replica.id == self.id))


@dataclass(frozen=True)
class ReplicaState:
    id: str
    host: str
    pid: int
    role: str
    address: str
    heartbeat_age: float
    queue_depth: int
    leases: int


@dataclass(frozen=True)
class ClusterState:
    replicas: list[ReplicaState]
    # Unfinished executions no live lease covers (waiting for an engine replica to take them).
    unowned: int
    running: int
    # The replica that leads the scheduler (launches scheduled executions); None while nobody does.
    scheduler_leader: str | None = None


def cluster_state(ctx: Context, now: datetime) -> ClusterState:
    with ctx.db.session() as s:
        leases = dict(s.execute(
            select(FlyteWorkflow.lease_owner, func.count())
            .where(FlyteWorkflow.done.is_(False), FlyteWorkflow.lease_expires_at >= now)
            .group_by(FlyteWorkflow.lease_owner)).all())
        running = s.scalar(select(func.count()).select_from(FlyteWorkflow).where(FlyteWorkflow.done.is_(False))) or 0
        rows = s.scalars(select(Replica).order_by(Replica.started_at)).all()
    replicas = [ReplicaState(r.id, r.host, r.pid, r.role, r.address,
                             (now - _aware(r.heartbeat_at, now)).total_seconds(), r.queue_depth, leases.get(r.id, 0)) for r in rows]
    leader = leader_of(ctx, SCHEDULER, now)
    return ClusterState(replicas, running - sum(leases.values()), running,
                        leader.owner if leader is not None else None)


def _aware(at: datetime, like: datetime) -> datetime:
    # SQLite returns naive datetimes for timezone-aware columns; every time flytelite writes is UTC.
    return at.replace(tzinfo=like.tzinfo) if at.tzinfo is None and like.tzinfo is not None else at
