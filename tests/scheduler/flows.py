"""Workflows and scheduled launch plans the scheduler tests register through the admin API."""

from __future__ import annotations

from datetime import datetime, timedelta

from flytekit import CronSchedule, FixedRate, LaunchPlan, task, workflow
from flytekit.models.concurrency import ConcurrencyLimitBehavior, ConcurrencyPolicy


@task
def stamp(when: datetime) -> str:
    return when.isoformat()


@workflow
def report(when: datetime) -> str:
    return stamp(when=when)


every_minute = LaunchPlan.get_or_create(
    report, name="every_minute", schedule=CronSchedule(schedule="* * * * *", kickoff_time_input_arg="when"))
# At most one unfinished execution at a time (Flyte 1.16's concurrency policy).
one_at_a_time_every_minute = LaunchPlan.get_or_create(
    report, name="one_at_a_time_every_minute",
    schedule=CronSchedule(schedule="* * * * *", kickoff_time_input_arg="when"),
    concurrency=ConcurrencyPolicy(max_concurrency=1, behavior=ConcurrencyLimitBehavior.SKIP))
quarter_hourly = LaunchPlan.get_or_create(
    report, name="quarter_hourly", schedule=CronSchedule(schedule="*/15 * * * *", kickoff_time_input_arg="when"))
hourly = LaunchPlan.get_or_create(
    report, name="hourly", schedule=CronSchedule(schedule="@hourly", kickoff_time_input_arg="when"))
every_ten_minutes = LaunchPlan.get_or_create(
    report, name="every_ten_minutes", schedule=FixedRate(duration=timedelta(minutes=10), kickoff_time_input_arg="when"))
