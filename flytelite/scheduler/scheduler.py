"""The Scheduler: launches executions of ACTIVE launch plans at their cron or fixed-rate slots.

Each tick reads the active scheduled launch plans from the store, works out
the slots due since each plan's progress (or its activation), applies the
catch-up policy and hands every slot to a launcher (admin's CreateExecution,
mode SCHEDULED). Execution names are deterministic per (launch plan version,
slot), so a slot that is launched twice (a restart, a second scheduler on the
same database) meets ALREADY_EXISTS and counts as launched. Time comes from an
injectable clock. The scheduler never runs anything itself.

Replicas on one database elect one scheduler through a leadership lease in the
database (server/leadership.py): a scheduler ticks only while its replica
leads, and stops launching as soon as it no longer does, so every slot fires
from one process. The deterministic names stay as a second line of defence
(a leader that stalls past its lease while a launch is under way).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from flyteidl.core import identifier_pb2 as idpb

from flytelite.config import SchedulerConfig
from flytelite.context import Context
from flytelite.errors import AlreadyExists, ConcurrencyLimitReached, FlyteliteError
from flytelite.idl.ids import describe
from flytelite.idl.schedules import Cadence, execution_name, parse_schedule, zone
from flytelite.idl.times import Clock
from flytelite.scheduler import progress
from flytelite.scheduler.catchup import due_slots

log = logging.getLogger(__name__)

# Most slots one plan launches in one tick; the rest follow on the next ticks.
MAX_SLOTS_PER_TICK = 100
# Longest wait before retrying a plan whose launch failed unexpectedly.
MAX_RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class ScheduledLaunch:
    """One slot of one launch plan version, ready to launch."""

    launch_plan: idpb.Identifier
    scheduled_at: datetime
    execution_name: str
    # Launch plan input that receives scheduled_at ("" for none).
    kickoff_input: str


# Creates the execution; raises AlreadyExists if an execution of that name exists.
Launcher = Callable[[ScheduledLaunch], object]


class Leadership(Protocol):
    """The scheduler's leadership among replicas (server/leadership.py is the database's)."""

    def held(self) -> bool:
        """True while this replica may launch scheduled executions."""
        ...

    async def campaign(self, stopping: asyncio.Event) -> None:
        """Win and keep the leadership until `stopping` is set, then give it up."""
        ...


@dataclass
class TickReport:
    """What one tick did, for logs and tests."""

    launched: list[ScheduledLaunch] = field(default_factory=list)
    already_launched: list[ScheduledLaunch] = field(default_factory=list)
    # Slots whose launch was refused (bad plan, missing workflow ...); they are not retried.
    refused: list[ScheduledLaunch] = field(default_factory=list)
    # Slots skipped because the plan's concurrency policy was at its limit; not retried either.
    over_limit: list[ScheduledLaunch] = field(default_factory=list)
    # False when this replica did not lead the scheduler, so the tick launched nothing.
    leading: bool = True


class Scheduler:
    def __init__(self, ctx: Context, launcher: Launcher, config: SchedulerConfig | None = None,
                 clock: Clock | None = None, leadership: Leadership | None = None):
        """`leadership`: the scheduler ticks only while it is held (None: always, for a lone scheduler)."""
        self.ctx = ctx
        self.leadership = leadership
        self.launcher = launcher
        self.config = config or ctx.config.scheduler
        self.clock = clock or ctx.clock
        self._tz = zone(self.config.timezone)
        self._grace = timedelta(seconds=self.config.catchup_grace_seconds)
        # Launch plan versions never change, so a parsed schedule (or its error) is kept per version.
        self._cadences: dict[tuple[str, str, str, str], Cadence | None] = {}
        # Plans whose last launch failed unexpectedly: (failures so far, monotonic time to retry).
        self._retry: dict[tuple[str, str, str, str], tuple[int, float]] = {}
        self._stopping = asyncio.Event()

    # -- one tick ---------------------------------------------------------------------------------------
    def tick(self) -> TickReport:
        """Launch every slot that is due now, per the catch-up policy, if this replica leads the scheduler."""
        report = TickReport()
        if not self._leads():
            report.leading = False
            return report
        for plan in progress.scheduled_plans(self.ctx):
            retry = self._retry.get(plan.key)
            if retry is not None and self.clock.monotonic() < retry[1]:
                continue
            cadence = self._cadence(plan)
            if cadence is not None:
                self._run_plan(plan, cadence, report)
        return report

    def _run_plan(self, plan: progress.ScheduledPlan, cadence: Cadence, report: TickReport) -> None:
        now = self.clock.now()
        after = max(plan.activated_at, plan.last_slot_at or plan.activated_at)
        due = due_slots(cadence, plan.activated_at, after, now, self.config.catchup, self._grace,
                        MAX_SLOTS_PER_TICK)
        if due.through is None:
            return
        skipped = due.through != (due.launch[-1] if due.launch else None)
        if skipped:
            log.info("%s: skipping missed slots up to %s (catch-up policy %r)",
                     describe(plan.id), due.through.isoformat(), self.config.catchup)
        handled: datetime | None = due.through
        for slot in due.launch:
            # Leadership lost mid-tick: the new leader goes on from the progress recorded here.
            if not self._leads() or not self._launch(plan, cadence, slot, report):
                handled = _before(slot, plan.last_slot_at)
                break
        if handled is not None:
            progress.record_progress(self.ctx, plan.key, handled, now)

    def _launch(self, plan: progress.ScheduledPlan, cadence: Cadence, slot: datetime,
                report: TickReport) -> bool:
        """Launch one slot; False if it failed in a way worth retrying (then the plan waits a while)."""
        launch = ScheduledLaunch(plan.id, slot, execution_name(plan.id, slot), cadence.kickoff_input)
        try:
            self.launcher(launch)
        except ConcurrencyLimitReached as exc:
            report.over_limit.append(launch)
            log.warning("%s: skipped the run scheduled at %s: %s", describe(plan.id), slot.isoformat(), exc)
        except AlreadyExists:
            report.already_launched.append(launch)
            log.info("%s: %s for %s was already launched (by an earlier run or another scheduler)",
                     describe(plan.id), launch.execution_name, slot.isoformat())
        except FlyteliteError as exc:
            # Admin refused the request itself (plan or workflow broken): retrying cannot help.
            log.error("%s: could not launch the run scheduled at %s: %s",
                      describe(plan.id), slot.isoformat(), exc)
            report.refused.append(launch)
        except Exception:
            failures = self._retry.get(plan.key, (0, 0.0))[0] + 1
            delay = min(MAX_RETRY_SECONDS, self.config.tick_seconds * 2 ** failures)
            self._retry[plan.key] = (failures, self.clock.monotonic() + delay)
            log.exception("%s: launching the run scheduled at %s failed; retrying in %.0f s",
                          describe(plan.id), slot.isoformat(), delay)
            return False
        else:
            report.launched.append(launch)
            log.info("%s: launched %s for %s", describe(plan.id), launch.execution_name, slot.isoformat())
        self._retry.pop(plan.key, None)
        return True

    def _leads(self) -> bool:
        return self.leadership is None or self.leadership.held()

    def _cadence(self, plan: progress.ScheduledPlan) -> Cadence | None:
        if plan.key not in self._cadences:
            try:
                self._cadences[plan.key] = parse_schedule(plan.schedule, self._tz)
            except FlyteliteError as exc:
                log.error("%s is active but its schedule cannot run: %s; register a fixed version",
                          describe(plan.id), exc)
                self._cadences[plan.key] = None
        return self._cadences[plan.key]

    # -- the loop ---------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Tick every `tick_seconds` until stop(); ticks run in a thread, off the event loop."""
        if not self.config.enabled:
            log.info("scheduler disabled (scheduler.enabled: false); schedules will not run")
            return
        log.info("scheduler started (tick %.1f s, catch-up %r)%s", self.config.tick_seconds, self.config.catchup,
                 "; it launches while this replica leads the scheduler" if self.leadership is not None else "")
        # The campaign ends only after the last tick, so the leadership is released once nothing launches.
        campaign_stop = asyncio.Event()
        campaign = (asyncio.create_task(self.leadership.campaign(campaign_stop), name="scheduler-leadership")
                    if self.leadership is not None else None)
        try:
            while not self._stopping.is_set():
                try:
                    await asyncio.to_thread(self.tick)
                except Exception:
                    log.exception("scheduler tick failed; trying again next tick")
                try:
                    await asyncio.wait_for(self._stopping.wait(), timeout=self.config.tick_seconds)
                except asyncio.TimeoutError:
                    pass
        finally:
            if campaign is not None:
                campaign_stop.set()
                await campaign

    def stop(self) -> None:
        """Let run() return after the tick in progress."""
        self._stopping.set()


def _before(slot: datetime, last: datetime | None) -> datetime | None:
    """Progress that makes `slot` due again: just before it, unless progress already stands there."""
    mark = slot - timedelta(microseconds=1)
    return mark if last is None or mark > last else None
