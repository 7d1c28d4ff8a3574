"""The replicas table: every running flytelite process reports itself there and keeps a heartbeat.

`flytelite status` reads it with the engine's leases and the scheduler's leadership, so an operator sees
which processes share the database, what each runs, which executions each drives and which one launches
scheduled executions. A replica that stops cleanly removes its row; one that dies leaves a row whose
heartbeat grows old (its leases expire meanwhile).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update

from flytelite.context import Context
from flytelite.server.leadership import SCHEDULER, leader_of
from flytelite.store.models import FlyteWorkflow, Replica


class ReplicaRegistry:
    def __init__(self, ctx: Context, replica_id: str, role: str, address: str):
        self.ctx, self.id, self.role, self.address = ctx, replica_id, role, address

    def register(self) -> None:
        now = self.ctx.clock.now()
        with self.ctx.db.session() as s:
            s.merge(Replica(id=self.id, host=socket.gethostname(), pid=os.getpid(), role=self.role,
                            address=self.address, started_at=now, heartbeat_at=now))

    def heartbeat(self) -> None:
        with self.ctx.db.session() as s:
            s.execute(update(Replica).where(Replica.id == self.id).values(heartbeat_at=self.ctx.clock.now()))

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
                             (now - _aware(r.heartbeat_at, now)).total_seconds(), leases.get(r.id, 0)) for r in rows]
    leader = leader_of(ctx, SCHEDULER, now)
    return ClusterState(replicas, running - sum(leases.values()), running,
                        leader.owner if leader is not None else None)


def _aware(at: datetime, like: datetime) -> datetime:
    # SQLite returns naive datetimes for timezone-aware columns; every time flytelite writes is UTC.
    return at.replace(tzinfo=like.tzinfo) if at.tzinfo is None and like.tzinfo is not None else at
