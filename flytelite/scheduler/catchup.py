"""Which due slots of a schedule to launch now, under the configured catch-up policy (pure).

A slot is on time while it is at most `grace` old; older due slots were missed
(the server was down, or the plan's loop fell behind). "all" launches every
missed slot, oldest first, as Flyte's scheduler does after a restart; "latest"
launches only the newest due slot when nothing is on time; "none" skips missed
slots. Skipped slots are gone for good: progress moves past them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flytelite.idl.schedules import Cadence, latest_slot, slots

ALL, LATEST, NONE = "all", "latest", "none"


@dataclass(frozen=True)
class DueSlots:
    # Scheduled times to launch, oldest first.
    launch: list[datetime]
    # The newest slot this decision accounts for (launched or skipped); None when nothing was due.
    through: datetime | None


def due_slots(cadence: Cadence, activated_at: datetime, after: datetime, now: datetime, policy: str,
              grace: timedelta, limit: int = 100) -> DueSlots:
    """The slots in (after, now] to launch; at most `limit`, the rest come on a later call."""
    if policy == ALL:
        due = slots(cadence, activated_at, after, now, limit)
        return DueSlots(due, due[-1] if due else None)
    newest = latest_slot(cadence, activated_at, now)
    if newest is None or newest <= after:
        return DueSlots([], None)
    on_time = slots(cadence, activated_at, max(after, now - grace), now, limit)
    if len(on_time) == limit:
        return DueSlots(on_time, on_time[-1])
    if policy == LATEST and not on_time:
        return DueSlots([newest], newest)
    if policy in (LATEST, NONE):
        return DueSlots(on_time, newest)
    raise ValueError(f"unknown catch-up policy {policy!r}; use {ALL}, {LATEST} or {NONE}")
