"""Slots, catch-up decisions, execution names and the CreateExecution request (pure, table-style)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from flyteidl.admin import execution_pb2, schedule_pb2
from flyteidl.core import identifier_pb2 as idpb

from flytelite.errors import InvalidArgument
from flytelite.idl.schedules import (
    _fnv1_64,
    execution_name,
    latest_slot,
    parse_schedule,
    slots,
    validate_schedule,
    zone,
)
from flytelite.scheduler.catchup import due_slots
from flytelite.scheduler.launcher import scheduled_execution_request
from flytelite.scheduler.scheduler import ScheduledLaunch

UTC = timezone.utc
T = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)  # a Wednesday
LP = idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project="flytesnacks", domain="development",
                     name="nightly", version="v1")


def cron(expression: str, kickoff: str = "") -> schedule_pb2.Schedule:
    return schedule_pb2.Schedule(cron_schedule=schedule_pb2.CronSchedule(schedule=expression),
                                 kickoff_time_input_arg=kickoff)


def rate(value: int, unit: int) -> schedule_pb2.Schedule:
    return schedule_pb2.Schedule(rate=schedule_pb2.FixedRate(value=value, unit=unit))


def at(**delta) -> datetime:
    return T + timedelta(**delta)


@pytest.mark.parametrize("expression, after, until, expected", [
    ("*/20 * * * *", T, at(hours=1), [at(minutes=20), at(minutes=40), at(hours=1)]),
    ("0 * * * *", at(minutes=59, seconds=59), at(hours=2), [at(hours=1), at(hours=2)]),
    ("@hourly", T, at(hours=2, minutes=30), [at(hours=1), at(hours=2)]),
    ("hourly", T, at(hours=1), [at(hours=1)]),  # flytekit's bare alias
    ("@daily", T, at(days=2), [datetime(2024, 5, 2, tzinfo=UTC), datetime(2024, 5, 3, tzinfo=UTC)]),
    ("@midnight", T, at(days=1), [datetime(2024, 5, 2, tzinfo=UTC)]),
    ("@weekly", T, at(days=7), [datetime(2024, 5, 5, tzinfo=UTC)]),  # Sunday
    ("@monthly", T, at(days=40), [datetime(2024, 6, 1, tzinfo=UTC)]),
    ("@yearly", T, at(days=366), [datetime(2025, 1, 1, tzinfo=UTC)]),
    ("@annually", T, at(days=366), [datetime(2025, 1, 1, tzinfo=UTC)]),
    ("30 9 * * 1-5", T, at(days=7), [datetime(2024, 5, d, 9, 30, tzinfo=UTC) for d in (2, 3, 6, 7, 8)]),
    ("@every 90s", T, at(minutes=5), [at(seconds=90), at(seconds=180), at(seconds=270)]),
    ("@every 1h30m", T, at(hours=4), [at(hours=1, minutes=30), at(hours=3)]),
    # Slots fall strictly after `after` and at or before `until`.
    ("*/20 * * * *", at(minutes=20), at(minutes=40), [at(minutes=40)]),
])
def test_cron_slots(expression, after, until, expected):
    assert slots(parse_schedule(cron(expression)), T, after, until) == expected


def test_cron_time_zones():
    # 09:00 in New York across the DST change of 10 March 2024.
    cadence = parse_schedule(cron("CRON_TZ=America/New_York 0 9 * * *"))
    found = slots(cadence, T, datetime(2024, 3, 8, tzinfo=UTC), datetime(2024, 3, 12, tzinfo=UTC))
    assert [s.hour for s in found] == [14, 14, 13, 13]
    # The configured zone applies when the expression names none.
    berlin = parse_schedule(cron("0 9 * * *"), zone("Europe/Berlin"))
    assert slots(berlin, T, T, at(days=1)) == [datetime(2024, 5, 2, 7, tzinfo=UTC)]
    assert parse_schedule(cron("TZ=Asia/Tokyo @daily")).tz == ZoneInfo("Asia/Tokyo")


@pytest.mark.parametrize("value, unit, step", [
    (5, schedule_pb2.MINUTE, timedelta(minutes=5)),
    (2, schedule_pb2.HOUR, timedelta(hours=2)),
    (1, schedule_pb2.DAY, timedelta(days=1)),
])
def test_fixed_rate_counts_from_activation(value, unit, step):
    activated = T + timedelta(seconds=7, microseconds=500)
    cadence = parse_schedule(rate(value, unit))
    anchor = T + timedelta(seconds=7)
    assert slots(cadence, activated, activated, activated + 3 * step) == [anchor + k * step for k in (1, 2, 3)]
    # Going on from a slot already handled.
    assert slots(cadence, activated, anchor + step, anchor + 2 * step) == [anchor + 2 * step]
    assert latest_slot(cadence, activated, anchor + 2 * step + timedelta(seconds=1)) == anchor + 2 * step
    assert latest_slot(cadence, activated, anchor + step - timedelta(seconds=1)) is None


def test_slot_limit_and_latest_cron_slot():
    cadence = parse_schedule(cron("* * * * *"))
    assert len(slots(cadence, T, T, at(days=1), limit=10)) == 10
    assert latest_slot(cadence, T, at(minutes=5)) == at(minutes=5)
    assert latest_slot(cadence, T, at(minutes=5, seconds=59)) == at(minutes=5)
    assert latest_slot(cadence, at(minutes=5), at(minutes=5, seconds=30)) is None


@pytest.mark.parametrize("schedule, message", [
    (cron("0 * * *"), "has 4 fields"),
    (cron("0 0 * * ? 2024"), "has 6 fields"),
    (cron("61 * * * *"), "not a valid cron schedule"),
    (cron("@fortnightly"), "not a schedule descriptor"),
    (cron("@every soon"), "not a duration"),
    (cron("CRON_TZ=Mars/Olympus 0 * * * *"), "unknown time zone"),
    (cron("0 0 31 2 *"), "never fires"),
    (schedule_pb2.Schedule(cron_expression="0 0 * * ? *"), "has 6 fields"),  # deprecated AWS syntax
    (rate(0, schedule_pb2.MINUTE), "greater than 0"),
    (rate(5, 7), "unit 7 is not supported"),
    (schedule_pb2.Schedule(), "has no schedule"),
])
def test_schedules_that_cannot_run_are_refused(schedule, message):
    with pytest.raises(InvalidArgument, match=message):
        validate_schedule(schedule)


def test_kickoff_input_and_every_is_whole_seconds():
    assert parse_schedule(cron("@every 2500ms", kickoff="when")) == parse_schedule(cron("@every 2s", "when"))
    assert parse_schedule(cron("@every 10ms")).interval == timedelta(seconds=1)
    assert parse_schedule(cron("@daily", kickoff="when")).kickoff_input == "when"


# -- execution names --------------------------------------------------------------------------------------
def test_fnv1_matches_the_reference_vectors():
    assert _fnv1_64(b"") == 0xCBF29CE484222325
    assert _fnv1_64(b"a") == 0xAF63BD4C8601B7BE
    assert _fnv1_64(b"foobar") == 0x340D8765A4DDA9C2


def test_execution_names_are_deterministic_per_version_and_slot():
    name = execution_name(LP, T)
    assert re.fullmatch(r"f[0-9a-f]{19}", name)
    assert name == execution_name(LP, T + timedelta(microseconds=300)) == execution_name(LP, T.astimezone(ZoneInfo("Asia/Tokyo")))
    assert name != execution_name(LP, at(minutes=1))
    other_version = idpb.Identifier()
    other_version.CopyFrom(LP)
    other_version.version = "v2"
    assert name != execution_name(other_version, T)
    # Flyte keeps the hash's 16 hex digits and three zero digits of the UUID's second half.
    assert name.endswith("000")


# -- catch-up decisions -----------------------------------------------------------------------------------
QUARTER = parse_schedule(cron("*/15 * * * *"))
GRACE = timedelta(minutes=1)


@pytest.mark.parametrize("policy, launch, through", [
    ("all", [at(minutes=15 * k) for k in range(1, 9)], at(hours=2)),
    ("latest", [at(hours=2)], at(hours=2)),
    ("none", [], at(hours=2)),
])
def test_missed_slots_by_policy(policy, launch, through):
    due = due_slots(QUARTER, T, T, at(hours=2, minutes=5), policy, GRACE)
    assert (due.launch, due.through) == (launch, through)


@pytest.mark.parametrize("policy", ["all", "latest", "none"])
def test_on_time_slots_launch_under_every_policy(policy):
    due = due_slots(QUARTER, T, T, at(minutes=15, seconds=30), policy, GRACE)
    assert (due.launch, due.through) == ([at(minutes=15)], at(minutes=15))
    # The missed 12:15 gives way to the on-time 12:30 under "latest".
    late = due_slots(QUARTER, T, T, at(minutes=30, seconds=1), policy, GRACE)
    assert late.launch == {"all": [at(minutes=15), at(minutes=30)], "latest": [at(minutes=30)],
                           "none": [at(minutes=30)]}[policy]


def test_nothing_due_and_limits():
    assert due_slots(QUARTER, T, at(minutes=15), at(minutes=29), "latest", GRACE).through is None
    assert due_slots(QUARTER, T, at(minutes=15), at(minutes=29), "all", GRACE).through is None
    capped = due_slots(QUARTER, T, T, at(hours=10), "all", GRACE, limit=3)
    assert (capped.launch, capped.through) == ([at(minutes=15), at(minutes=30), at(minutes=45)], at(minutes=45))


# -- the CreateExecution request ----------------------------------------------------------------------------
def test_scheduled_execution_request():
    request = scheduled_execution_request(ScheduledLaunch(LP, T, "fabc", "when"))
    assert (request.project, request.domain, request.name) == ("flytesnacks", "development", "fabc")
    assert request.spec.launch_plan == LP
    assert request.spec.metadata.mode == execution_pb2.ExecutionMetadata.SCHEDULED
    assert request.spec.metadata.scheduled_at.ToDatetime(tzinfo=UTC) == T
    assert request.inputs.literals["when"].scalar.primitive.datetime.ToDatetime(tzinfo=UTC) == T
    assert not scheduled_execution_request(ScheduledLaunch(LP, T, "fabc", "")).inputs.literals
