"""What the scheduler reads and writes in the store: active scheduled launch plans and per-plan progress.

Progress is Flyte's scheduler snapshot made durable per launch plan version:
the newest scheduled time handled. It only ever moves forward, so two
schedulers on one database (or one restarted) agree on where to go on from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from flyteidl.admin import launch_plan_pb2, schedule_pb2
from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from flytelite.context import Context
from flytelite.store import entities
from flytelite.store.models import LaunchPlan, ScheduleProgress

SCHEDULED_TYPES = (entities.SCHEDULE_CRON, entities.SCHEDULE_RATE)


@dataclass(frozen=True)
class ScheduledPlan:
    """An ACTIVE launch plan version with a schedule, and how far its schedule has run."""

    id: idpb.Identifier
    schedule: schedule_pb2.Schedule
    # When this version became active: slots before it never run.
    activated_at: datetime
    last_slot_at: datetime | None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.id.project, self.id.domain, self.id.name, self.id.version)


def as_utc(dt: datetime) -> datetime:
    """Stored times come back naive from SQLite; every stored time is UTC."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def scheduled_plans(ctx: Context) -> list[ScheduledPlan]:
    """Every ACTIVE launch plan version that has a schedule, with its progress."""
    with ctx.db.session() as session:
        rows = entities.active_launch_plans(session, SCHEDULED_TYPES)
        progress = {(p.project, p.domain, p.name, p.version): p.last_slot_at
                    for p in session.scalars(select(ScheduleProgress))}
        return [_plan(row, progress.get((row.project, row.domain, row.name, row.version))) for row in rows]


def _plan(row: LaunchPlan, last: datetime | None) -> ScheduledPlan:
    spec = launch_plan_pb2.LaunchPlanSpec.FromString(row.spec_pb)
    ident = idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=row.project, domain=row.domain,
                            name=row.name, version=row.version)
    return ScheduledPlan(ident, spec.entity_metadata.schedule, as_utc(row.updated_at),
                         as_utc(last) if last is not None else None)


def record_progress(ctx: Context, key: tuple[str, str, str, str], slot: datetime, now: datetime) -> None:
    """Move a plan's progress forward to `slot` (never backward)."""
    for _ in range(2):
        try:
            with ctx.db.session() as session:
                row = session.get(ScheduleProgress, key)
                if row is None:
                    project, domain, name, version = key
                    session.add(ScheduleProgress(project=project, domain=domain, name=name, version=version,
                                                 last_slot_at=slot, updated_at=now))
                elif as_utc(row.last_slot_at) < slot:
                    row.last_slot_at = slot
                    row.updated_at = now
            return
        except IntegrityError:
            # Another scheduler inserted the row first; the second pass updates it.
            continue


def last_slot(ctx: Context, key: tuple[str, str, str, str]) -> datetime | None:
    with ctx.db.session() as session:
        row = session.get(ScheduleProgress, key)
        return as_utc(row.last_slot_at) if row is not None else None
