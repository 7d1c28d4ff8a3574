"""Schedules end to end: `pyflyte register --activate-launchplans` a scheduled launch plan on a real server,
watch scheduled executions appear (mode SCHEDULED, kickoff input set, run to success), deactivate it with
FlyteRemote and see them stop.

flytekit refuses schedules finer than a minute (FixedRate raises for seconds; CronSchedule validates with
croniter, which has no `@every`). Flyte's scheduler does run the cron descriptor `@every <duration>`, and
flytekit's schedule model carries it, so the fast test uses `@every 3s`; the FixedRate test uses one minute.
"""

from __future__ import annotations

import textwrap
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from flytekit.models.core.identifier import Identifier, ResourceType
from flytekit.models.execution import ExecutionMetadata
from flytekit.models.filters import Equal

from tests.e2e.flyte_cli import pyflyte

pytestmark = pytest.mark.e2e

P, D = "flytesnacks", "development"

FLOWS = '''
from datetime import datetime, timedelta

from flytekit import FixedRate, LaunchPlan, task, workflow
from flytekit.models.schedule import Schedule


@task
def stamp(when: datetime) -> str:
    return when.isoformat()


@workflow
def report(when: datetime) -> str:
    return stamp(when=when)


scheduled = LaunchPlan.get_or_create(report, name="{name}", schedule={schedule})
'''
EVERY_3S = 'Schedule("when", cron_schedule=Schedule.CronSchedule("@every 3s", None))'
EVERY_MINUTE = 'FixedRate(duration=timedelta(minutes=1), kickoff_time_input_arg="when")'


def register_scheduled(server, root: Path, schedule: str) -> str:
    """Register a package whose launch plan has `schedule`, activating its launch plans; returns its name."""
    package = f"sched_{uuid.uuid4().hex[:8]}"
    name = f"{package}_scheduled"
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "flows.py").write_text(textwrap.dedent(FLOWS.format(name=name, schedule=schedule)))
    pyflyte(server, "register", "--project", P, "--domain", D, "--version", "v1", "--activate-launchplans",
            package, cwd=root)
    return name


def scheduled_executions(remote, name: str) -> list:
    executions, _ = remote.client.list_executions_paginated(P, D, limit=500,
                                                            filters=[Equal("launch_plan.name", name)])
    return sorted(executions, key=lambda e: e.spec.metadata.scheduled_at)


def wait_for_executions(remote, name: str, count: int, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executions = scheduled_executions(remote, name)
        if len(executions) >= count:
            return executions
        time.sleep(0.5)
    raise AssertionError(f"{count} executions of {name} expected within {timeout}s, "
                         f"got {len(scheduled_executions(remote, name))}")


def scheduled_at(execution) -> datetime:
    # flytekit's model gives the protobuf timestamp as a naive UTC datetime.
    return execution.spec.metadata.scheduled_at.replace(tzinfo=timezone.utc)


def check_scheduled(remote, executions: list, interval: timedelta) -> None:
    times = [scheduled_at(e) for e in executions]
    assert all(e.spec.metadata.mode == ExecutionMetadata.ExecutionMode.SCHEDULED for e in executions)
    assert len({e.id.name for e in executions}) == len(executions)
    assert all(later - earlier == interval for earlier, later in zip(times[:-1], times[1:], strict=True))
    # The kickoff input is the scheduled time, and it reaches the task.
    first = remote.wait(remote.fetch_execution(name=executions[0].id.name), timeout=timedelta(seconds=120))
    kickoff = first.inputs.get("when", datetime)
    assert kickoff.astimezone(timezone.utc) == times[0]
    assert first.outputs.get("o0", str) == kickoff.isoformat()


def deactivate_and_see_them_stop(remote, name: str, interval: timedelta, slots: int) -> None:
    """Deactivate, then wait until `slots` more slots would have come due: no new execution appears."""
    remote.deactivate_launchplan(Identifier(ResourceType.LAUNCH_PLAN, P, D, name, "v1"))
    time.sleep(2)  # a tick that was already under way may still launch one
    executions = scheduled_executions(remote, name)
    last = scheduled_at(executions[-1])
    time.sleep(max(0.0, (last + slots * interval - datetime.now(timezone.utc)).total_seconds()) + 3)
    assert len(scheduled_executions(remote, name)) == len(executions)


def test_every_few_seconds_while_active(server, remote, tmp_path):
    name = register_scheduled(server, tmp_path / "proj", EVERY_3S)
    executions = wait_for_executions(remote, name, 3, timeout=30)
    check_scheduled(remote, executions, timedelta(seconds=3))
    deactivate_and_see_them_stop(remote, name, timedelta(seconds=3), slots=3)


def test_fixed_rate_while_active(server, remote, tmp_path):
    """A fixed rate fires (stopping on deactivation is the same for every kind of schedule: the test above)."""
    name = register_scheduled(server, tmp_path / "proj", EVERY_MINUTE)
    executions = wait_for_executions(remote, name, 1, timeout=90)
    check_scheduled(remote, executions, timedelta(minutes=1))
