"""Schedulers of two replicas on one database, each behind the database's scheduler leadership: only the
leader launches, another replica takes over once a dead leader's lease expired, and a leader that lost the
leadership launches nothing until it wins it again; every slot is launched once, by one of them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from flytelite.config import SchedulerConfig
from flytelite.idl.times import Clock
from flytelite.scheduler.launcher import admin_launcher
from flytelite.scheduler.scheduler import Scheduler
from flytelite.server.leadership import SCHEDULER, Leadership, leader_of
from tests.scheduler.harness import Harness, flows, minutes
from tests.scheduler.test_scheduler import utc

LEASE = 15.0
STEP = timedelta(seconds=5)


@dataclass
class Replica:
    """One replica's scheduler and leadership, and what its ticks did."""

    name: str
    harness: Harness
    leadership: Leadership
    scheduler: Scheduler
    launched: list[str] = field(default_factory=list)
    already_launched: list[str] = field(default_factory=list)
    ticks_led: int = 0

    def step(self) -> None:
        """What its scheduler loop does between two moves of the clock: renew (or try to win), then tick."""
        self.leadership.acquire()
        report = self.scheduler.tick()
        self.ticks_led += report.leading
        self.launched += [launch.execution_name for launch in report.launched]
        self.already_launched += [launch.execution_name for launch in report.already_launched]


def replica(name: str, harness: Harness) -> Replica:
    leadership = Leadership(harness.ctx, SCHEDULER, name, LEASE)
    scheduler = Scheduler(harness.ctx, admin_launcher(harness.ctx), SchedulerConfig(), leadership=leadership)
    return Replica(name, harness, leadership, scheduler)


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path / "home")
    yield harness
    harness.close()


def run_for(h: Harness, alive: list[Replica], duration: timedelta) -> None:
    end = h.clock.now() + duration
    while h.clock.now() < end:
        h.clock.advance(STEP)
        for r in alive:
            r.step()


def test_only_the_leader_launches_and_another_replica_takes_over(h, tmp_path):
    h.activate(h.register(flows.every_minute))
    other = Harness(tmp_path / "home", clock=h.clock)  # a second process on the same database
    a, b = replica("replica-a", h), replica("replica-b", other)
    try:
        run_for(h, [a, b], minutes(10))  # to 12:10: a won first and keeps renewing
        assert len(a.launched) == 10 and a.ticks_led == 120
        assert b.launched == [] and b.ticks_led == 0

        # a stalls (a long pause, a partition): no renewal, no tick. b takes over once a's lease expired
        # and catches up the slots that came due meanwhile.
        run_for(h, [b], minutes(5))  # to 12:15
        assert len(b.launched) == 5 and leader_of(h.ctx, SCHEDULER, h.clock.now()).owner == "replica-b"

        # a comes back: its renewal is refused, so it launches nothing while b leads.
        run_for(h, [a, b], minutes(5))  # to 12:20
        assert len(a.launched) == 10 and len(b.launched) == 10

        # b dies: a wins the leadership again once b's lease expired, and goes on.
        run_for(h, [a], minutes(5))  # to 12:25
        assert len(a.launched) == 15
    finally:
        other.close()

    expected = [utc(12, 1) + minutes(i) for i in range(25)]
    assert h.scheduled_times("every_minute") == expected
    # Each slot was launched once by one replica: no scheduler even met a slot another had launched.
    assert len(a.launched) + len(b.launched) == len(expected)
    assert set(a.launched).isdisjoint(b.launched)
    assert a.already_launched == [] and b.already_launched == []


def test_the_running_scheduler_leads_while_it_runs_and_releases_when_stopped(tmp_path):
    """Scheduler.run() on the real clock campaigns for the leadership beside its ticks and gives it up after
    its last tick, so another replica can take over at once."""
    harness = Harness(tmp_path / "home", clock=Clock())
    leadership = Leadership(harness.ctx, SCHEDULER, "replica-a", 0.8)
    scheduler = Scheduler(harness.ctx, admin_launcher(harness.ctx), SchedulerConfig(tick_seconds=0.05),
                          leadership=leadership)
    led: list[bool] = []
    tick = scheduler.tick
    scheduler.tick = lambda: led.append(tick().leading)  # type: ignore[method-assign,assignment,func-returns-value]

    def owner() -> str | None:
        state = leader_of(harness.ctx, SCHEDULER, harness.ctx.clock.now())
        return state.owner if state is not None else None

    async def scenario() -> None:
        running = asyncio.create_task(scheduler.run())
        deadline = time.monotonic() + 30
        while not (led and led[-1]):
            assert time.monotonic() < deadline, "the scheduler never ticked as the leader"
            await asyncio.sleep(0.02)
        assert owner() == "replica-a"
        scheduler.stop()
        await running

    try:
        asyncio.run(scenario())
        assert owner() is None
    finally:
        harness.close()
