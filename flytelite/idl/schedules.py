"""When a launch plan's schedule fires, and what its executions are called (pure: no I/O, no clock).

Flyte's native scheduler reads a cron schedule as robfig/cron's ParseStandard
does: five fields, the descriptors @yearly/@annually, @monthly, @weekly,
@daily/@midnight, @hourly and `@every <duration>`, and an optional
`CRON_TZ=<zone>` prefix. A fixed rate is `value` MINUTEs, HOURs or DAYs; its
slots (like `@every`'s) are counted from the moment the launch plan became
active. Scheduled times are whole seconds, in UTC.

Beyond Flyte: flytekit's bare aliases (`hourly`, `days`, ...) are read as the
matching descriptor instead of being refused at registration.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from flyteidl.admin import schedule_pb2
from flyteidl.core import identifier_pb2 as idpb

from flytelite.errors import InvalidArgument

# What each descriptor means as a five-field expression.
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# flytekit's CronSchedule accepts these without the "@".
FLYTEKIT_ALIASES = {
    "hourly": "@hourly", "hours": "@hourly",
    "daily": "@daily", "days": "@daily",
    "weekly": "@weekly", "weeks": "@weekly",
    "monthly": "@monthly", "months": "@monthly",
    "annually": "@annually", "yearly": "@yearly", "years": "@yearly",
}
FIXED_RATE_UNITS = {
    schedule_pb2.MINUTE: timedelta(minutes=1),
    schedule_pb2.HOUR: timedelta(hours=1),
    schedule_pb2.DAY: timedelta(days=1),
}
_EVERY = "@every "
_TZ_PREFIX = re.compile(r"^(?:CRON_)?TZ=(\S+)\s+(.*)$", re.DOTALL)
# Go's time.ParseDuration units, in seconds.
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class Cadence:
    """A schedule reduced to what computing its slots needs: a cron expression or a fixed interval."""

    # Five-field cron expression, or "" for an interval.
    cron: str
    # Whole seconds between slots, counted from activation, or None for a cron expression.
    interval: timedelta | None
    # Zone the cron expression is read in.
    tz: tzinfo
    # Launch plan input that receives the scheduled time ("" for none).
    kickoff_input: str

    def describe(self) -> str:
        if self.interval is not None:
            return f"every {self.interval}"
        return f"cron {self.cron!r} ({self.tz})"


def parse_schedule(schedule: schedule_pb2.Schedule, tz: tzinfo = timezone.utc) -> Cadence:
    """The cadence of a launch plan's schedule; InvalidArgument (saying why) if it cannot run."""
    kind = schedule.WhichOneof("ScheduleExpression")
    kickoff = schedule.kickoff_time_input_arg
    if kind == "rate":
        return Cadence("", _fixed_rate(schedule.rate), timezone.utc, kickoff)
    if kind == "cron_schedule":
        expression = schedule.cron_schedule.schedule
    elif kind == "cron_expression":
        expression = schedule.cron_expression
    else:
        raise InvalidArgument("the launch plan has no schedule (cron_schedule or rate)")
    cron, interval, tz = _parse_cron(expression.strip(), tz)
    return Cadence(cron, interval, tz, kickoff)


def validate_schedule(schedule: schedule_pb2.Schedule) -> None:
    """Raise InvalidArgument if the scheduler could not run this schedule (for registration)."""
    parse_schedule(schedule)


def slots(cadence: Cadence, activated_at: datetime, after: datetime, until: datetime,
          limit: int = 1000) -> list[datetime]:
    """Scheduled times t with after < t <= until, oldest first, at most `limit` of them."""
    if until <= after or limit <= 0:
        return []
    if cadence.interval is not None:
        anchor, step = _floor_second(activated_at), cadence.interval
        first = max(1, (after - anchor) // step + 1)
        last = (until - anchor) // step
        return [anchor + k * step for k in range(first, min(last, first + limit - 1) + 1)]
    found: list[datetime] = []
    times = croniter(cadence.cron, after.astimezone(cadence.tz))
    while len(found) < limit:
        slot = times.get_next(datetime).astimezone(timezone.utc)
        if slot > until:
            break
        found.append(slot)
    return found


def latest_slot(cadence: Cadence, activated_at: datetime, until: datetime) -> datetime | None:
    """The newest scheduled time at or before `until` (and after activation), if any."""
    if cadence.interval is not None:
        anchor = _floor_second(activated_at)
        k = (until - anchor) // cadence.interval
        return anchor + k * cadence.interval if k >= 1 else None
    # Slots fall on whole seconds, so "at or before until" is "before the next whole second".
    slot = croniter(cadence.cron, (_floor_second(until) + _SECOND).astimezone(cadence.tz)).get_prev(datetime)
    slot = slot.astimezone(timezone.utc)
    return slot if slot > activated_at else None


def execution_name(launch_plan: idpb.Identifier, scheduled_at: datetime) -> str:
    """The execution name Flyte's scheduler gives this slot: "f" + 19 hex digits of a hash of both.

    The same launch plan version and time always give the same name, which is what
    keeps a slot from running twice (CreateExecution refuses an existing name).
    """
    key = (f"{launch_plan.project}:{launch_plan.domain}:{launch_plan.name}:{launch_plan.version}:"
           f"{math.floor(scheduled_at.timestamp())}")
    # Flyte puts the little-endian hash into the first 8 bytes of a zeroed UUID and keeps 19 hex digits.
    digits = _fnv1_64(key.encode()).to_bytes(8, "little").hex() + "0" * 16
    return "f" + digits[:19]


# -- parsing --------------------------------------------------------------------------------------------
def _fixed_rate(rate: schedule_pb2.FixedRate) -> timedelta:
    unit = FIXED_RATE_UNITS.get(rate.unit)
    if unit is None:
        raise InvalidArgument(f"fixed rate unit {rate.unit} is not supported; use MINUTE, HOUR or DAY")
    if rate.value <= 0:
        raise InvalidArgument("a fixed-rate schedule needs a value greater than 0")
    return rate.value * unit


def _parse_cron(expression: str, tz: tzinfo) -> tuple[str, timedelta | None, tzinfo]:
    match = _TZ_PREFIX.match(expression)
    if match:
        tz = _zone(match.group(1), expression)
        expression = match.group(2).strip()
    lowered = expression.lower()
    lowered = FLYTEKIT_ALIASES.get(lowered, lowered)
    if lowered.startswith(_EVERY):
        return "", _every(expression[len(_EVERY):].strip(), expression), tz
    if lowered.startswith("@"):
        if lowered not in DESCRIPTORS:
            raise InvalidArgument(f"{expression!r} is not a schedule descriptor; use one of "
                                  f"{', '.join(DESCRIPTORS)} or '@every <duration>'")
        return DESCRIPTORS[lowered], None, tz
    fields = expression.split()
    if len(fields) != 5:
        raise InvalidArgument(f"{expression!r} has {len(fields)} fields; a cron schedule has five "
                              f"(minute hour day-of-month month day-of-week) or is an alias such as @hourly")
    cron = " ".join(fields)
    if not croniter.is_valid(cron):
        raise InvalidArgument(f"{expression!r} is not a valid cron schedule; use five fields "
                              f"(minute hour day-of-month month day-of-week) or an alias such as @hourly")
    try:
        croniter(cron, datetime(2000, 1, 1, tzinfo=tz)).get_next(datetime)
    except Exception as exc:  # croniter's own errors for schedules that never match, such as "0 0 31 2 *"
        raise InvalidArgument(f"cron schedule {expression!r} never fires: {exc}") from None
    return cron, None, tz


def _every(text: str, expression: str) -> timedelta:
    """Go's time.ParseDuration (as `@every` uses it), kept to whole seconds and at least one."""
    if not text or _GO_PART.sub("", text) != "":
        raise InvalidArgument(f"{expression!r}: {text!r} is not a duration; write it as Go does, "
                              f"e.g. '@every 30s' or '@every 1h30m'")
    seconds = sum(float(number) * _GO_UNITS[unit] for number, unit in _GO_PART.findall(text))
    return timedelta(seconds=max(1, math.floor(seconds)))


def _zone(name: str, expression: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(f"{expression!r}: unknown time zone {name!r}; use an IANA name "
                              f"such as Europe/Berlin") from None


def zone(name: str) -> tzinfo:
    """The configured zone cron schedules are read in (scheduler.timezone)."""
    return timezone.utc if name.upper() == "UTC" else _zone(name, f"scheduler.timezone {name}")


# -- small helpers --------------------------------------------------------------------------------------
def _floor_second(dt: datetime) -> datetime:
    return dt.replace(microsecond=0)


_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def _fnv1_64(data: bytes) -> int:
    """FNV-1 (multiply, then xor), 64 bits: Go's hash/fnv New64."""
    h = _FNV_OFFSET
    for byte in data:
        h = (h * _FNV_PRIME) & _MASK
        h ^= byte
    return h
