"""The clock-driven Scheduler over a real SQLite store and the real admin CreateExecution path:
slots, catch-up after downtime, activation changes, restarts and two schedulers without duplicates."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone

import pytest
from flyteidl.admin import execution_pb2
from sqlalchemy import delete

from flytelite import errors
from flytelite.config import SchedulerConfig
from flytelite.idl.schedules import execution_name
from flytelite.scheduler import progress
from flytelite.scheduler.launcher import admin_launcher
from flytelite.scheduler.scheduler import Scheduler
from flytelite.store.models import ScheduleProgress
from tests.scheduler.harness import T0, Harness, ManualClock, flows, lp_id, minutes, run_for

SCHEDULED = execution_pb2.ExecutionMetadata.SCHEDULED


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path / "home")
    yield harness
    harness.close()


def utc(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2024, 5, 1, hour, minute, second, tzinfo=timezone.utc)


def test_an_hour_of_cron_slots(h):
    ident = h.register(flows.every_minute)
    h.clock.set(utc(12, 0, 30))
    h.activate(ident)
    scheduler = h.scheduler()
    run_for(h, [scheduler], minutes(60), step=timedelta(seconds=15))

    # Activated at 12:00:30: the 12:01 slot is the first, 13:00 the sixtieth; nothing before activation.
    assert h.scheduled_times("every_minute") == [utc(12, 1) + minutes(i) for i in range(60)]
    executions = h.executions("every_minute")
    assert len({e.id.name for e in executions}) == 60
    for execution in executions:
        scheduled_at = execution.spec.metadata.scheduled_at.ToDatetime(tzinfo=timezone.utc)
        assert execution.spec.metadata.mode == SCHEDULED
        assert execution.id.name == execution_name(ident, scheduled_at)
        assert execution.spec.launch_plan.version == "v1"
    # The kickoff input carries the scheduled time.
    first = min(executions, key=lambda e: e.spec.metadata.scheduled_at.seconds)
    assert h.inputs(first).literals["when"].scalar.primitive.datetime.ToDatetime(tzinfo=timezone.utc) == utc(12, 1)
    # Scheduled executions are listed like any other, and filter by mode.
    assert len(h.executions()) == 60


def test_alias_and_fixed_rate_slots(h):
    hourly = h.register(flows.hourly)
    rate = h.register(flows.every_ten_minutes)
    h.clock.set(utc(12, 0, 7, ) + timedelta(microseconds=250))
    h.activate(hourly)
    h.activate(rate)
    run_for(h, [h.scheduler()], minutes(125))

    assert h.scheduled_times("hourly") == [utc(13), utc(14)]
    # A fixed rate counts from activation, on whole seconds, as Flyte's scheduler does.
    assert h.scheduled_times("every_ten_minutes") == [utc(12, 0, 7) + minutes(10 * k) for k in range(1, 13)]


@pytest.mark.parametrize("policy, expected", [
    # Down from 12:20 to 14:05: the 12:30 ... 14:00 slots were missed.
    ("all", [utc(12, 15)] + [utc(12, 30) + minutes(15 * k) for k in range(7)] + [utc(14, 15)]),
    ("latest", [utc(12, 15), utc(14, 0), utc(14, 15)]),
    ("none", [utc(12, 15), utc(14, 15)]),
])
def test_catch_up_after_downtime(h, tmp_path, policy, expected):
    ident = h.register(flows.quarter_hourly)
    h.clock.set(utc(12, 5))
    h.activate(ident)
    run_for(h, [h.scheduler(policy)], minutes(15))
    assert h.scheduled_times("quarter_hourly") == [utc(12, 15)]

    # The server stops; it starts again at 14:05 with a new scheduler that knows only what the store knows.
    h.close()
    h.clock.set(utc(14, 5))
    restarted = Harness(tmp_path / "home", clock=h.clock)
    run_for(restarted, [restarted.scheduler(policy)], minutes(15))
    assert restarted.scheduled_times("quarter_hourly") == expected
    restarted.close()


def test_deactivation_stops_and_reactivation_starts_from_then(h):
    ident = h.register(flows.quarter_hourly)
    h.activate(ident)
    scheduler = h.scheduler()
    run_for(h, [scheduler], minutes(31))  # 12:15, 12:30
    h.deactivate(ident)
    run_for(h, [scheduler], minutes(60))  # to 13:31: nothing
    assert h.scheduled_times("quarter_hourly") == [utc(12, 15), utc(12, 30)]

    # Slots that passed while the plan was inactive are not caught up, even under "all".
    h.activate(ident)
    run_for(h, [scheduler], minutes(30))  # to 14:01
    assert h.scheduled_times("quarter_hourly") == [utc(12, 15), utc(12, 30), utc(13, 45), utc(14, 0)]


def test_activating_a_new_version_replaces_the_old_schedule(h):
    v1 = h.register(flows.quarter_hourly, "v1")
    v2 = h.register(flows.quarter_hourly, "v2")
    h.activate(v1)
    scheduler = h.scheduler()
    run_for(h, [scheduler], minutes(40))  # to 12:40: v1 ran 12:15 and 12:30
    h.activate(v2)  # as `pyflyte register --activate-launchplans` of a new version does
    run_for(h, [scheduler], minutes(40))  # to 13:20: v2 runs 12:45, 13:00, 13:15

    assert h.scheduled_times("quarter_hourly", "v1") == [utc(12, 15), utc(12, 30)]
    assert h.scheduled_times("quarter_hourly", "v2") == [utc(12, 45), utc(13, 0), utc(13, 15)]


def test_restart_after_launch_before_progress_does_not_launch_twice(h, tmp_path):
    ident = h.register(flows.every_minute)
    h.activate(ident)
    h.clock.advance(minutes(5))
    assert len(h.scheduler().tick().launched) == 5

    # A crash between CreateExecution and the progress write: the new scheduler finds every name taken.
    with h.ctx.db.session() as session:
        session.execute(delete(ScheduleProgress))
    report = h.scheduler().tick()
    assert report.launched == [] and len(report.already_launched) == 5
    assert progress.last_slot(h.ctx, ("flytesnacks", "development", "every_minute", "v1")) == utc(12, 5)
    assert len(h.executions("every_minute")) == 5


def test_two_schedulers_on_one_database_launch_each_slot_once(h, tmp_path):
    ident = h.register(flows.every_minute)
    h.activate(ident)
    # A second server process would have its own engine and session pool on the same database file.
    other = Harness(tmp_path / "home", clock=h.clock)
    schedulers = [h.scheduler(), other.scheduler()]
    launched: list[int] = []

    def tick(scheduler, barrier):
        barrier.wait()
        launched.append(len(scheduler.tick().launched))

    for _ in range(20):
        h.clock.advance(timedelta(seconds=45))
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=tick, args=(s, barrier)) for s in schedulers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    other.close()

    expected = [utc(12, 1) + minutes(i) for i in range(15)]  # 12:00 + 20 x 45 s = 12:15
    assert h.scheduled_times("every_minute") == expected
    assert sum(launched) == len(expected)


def test_failed_launch_is_retried_and_refused_launch_is_not(h):
    ident = h.register(flows.every_minute)
    h.activate(ident)
    real = admin_launcher(h.ctx)
    faults = {"transient": 1}

    def flaky(launch):
        if launch.scheduled_at == utc(12, 2) and faults["transient"]:
            faults["transient"] -= 1
            raise OSError("database is locked")
        if launch.scheduled_at == utc(12, 4):
            raise errors.InvalidArgument("launch plan input 'when' is missing")
        return real(launch)

    scheduler = h.scheduler(launcher=flaky)
    h.clock.advance(minutes(3))
    report = scheduler.tick()
    # 12:01 launched; 12:02 failed, so the plan stops there and waits before trying again.
    assert [launch.scheduled_at for launch in report.launched] == [utc(12, 1)]
    assert scheduler.tick().launched == []
    h.clock.advance(timedelta(seconds=5))
    assert [launch.scheduled_at for launch in scheduler.tick().launched] == [utc(12, 2), utc(12, 3)]
    h.clock.advance(minutes(2))
    report = scheduler.tick()
    # A refused slot is reported once and never retried.
    assert [launch.scheduled_at for launch in report.refused] == [utc(12, 4)]
    assert [launch.scheduled_at for launch in report.launched] == [utc(12, 5)]
    assert scheduler.tick().refused == []
    assert h.scheduled_times("every_minute") == [utc(12, m) for m in (1, 2, 3, 5)]


def test_a_slot_over_the_plans_concurrency_limit_is_skipped_not_retried(h):
    ident = h.register(flows.one_at_a_time_every_minute)
    h.activate(ident)
    scheduler = h.scheduler()
    h.clock.advance(minutes(3))
    report = scheduler.tick()
    # The 12:01 run has not finished (no engine runs here): 12:02 and 12:03 are skipped, once.
    assert [launch.scheduled_at for launch in report.launched] == [utc(12, 1)]
    assert [launch.scheduled_at for launch in report.over_limit] == [utc(12, 2), utc(12, 3)]
    h.clock.advance(timedelta(seconds=5))
    report = scheduler.tick()
    assert report.launched == report.over_limit == []
    assert h.scheduled_times("one_at_a_time_every_minute") == [utc(12, 1)]


def test_plans_without_schedule_or_inactive_never_launch(h):
    h.register(flows.quarter_hourly)  # registered, never activated
    default = lp_id("tests.scheduler.flows.report")
    h.activate(default)  # active, but no schedule
    run_for(h, [h.scheduler()], minutes(60))
    assert h.executions() == []


def test_clock_is_injectable_without_touching_the_context(h):
    ident = h.register(flows.every_minute)
    h.activate(ident)
    own = ManualClock(T0)
    scheduler = Scheduler(h.ctx, admin_launcher(h.ctx), SchedulerConfig(), clock=own)
    own.advance(minutes(2))
    assert [launch.scheduled_at for launch in scheduler.tick().launched] == [utc(12, 1), utc(12, 2)]


def test_run_ticks_until_stopped_and_disabled_does_nothing(h):
    ident = h.register(flows.every_minute)
    h.activate(ident)
    scheduler = Scheduler(h.ctx, admin_launcher(h.ctx), SchedulerConfig(tick_seconds=0.01))

    async def serve() -> None:
        running = asyncio.create_task(scheduler.run())
        h.clock.advance(minutes(3))
        for _ in range(500):
            if len(h.executions()) == 3:
                break
            await asyncio.sleep(0.01)
        scheduler.stop()
        await asyncio.wait_for(running, 5)

    asyncio.run(serve())
    assert h.scheduled_times("every_minute") == [utc(12, 1), utc(12, 2), utc(12, 3)]

    h.clock.advance(minutes(3))
    disabled = Scheduler(h.ctx, admin_launcher(h.ctx), SchedulerConfig(enabled=False))
    asyncio.run(asyncio.wait_for(disabled.run(), 5))
    assert len(h.executions()) == 3
