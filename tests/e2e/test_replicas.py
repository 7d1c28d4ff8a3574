"""Several flytelite processes on one database: an API-only replica takes the requests, two engine
replicas share the executions through their leases, and when one engine replica is SIGKILLed the other
takes its executions over; every execution ends once, and no task that had succeeded runs again. One
engine replica leads the scheduler; when it is SIGKILLed the other takes the leadership over and the
schedule goes on firing, every slot launched once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import PG_ENV, config_args_for, make_server
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote, wait_for
from tests.scheduler.test_schedule_e2e import register_scheduled, scheduled_at, scheduled_executions

pytestmark = pytest.mark.e2e
# Short leases so that a takeover happens within the test; resyncs often, so the API replica's new
# executions reach an engine replica quickly.
CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 3\n"
EXECUTIONS = 4


def _replica(folder: Path, home: Path, role: str, config: str = CONFIG):
    server = make_server(folder, config, home=home)
    server.role = role
    return server


@contextmanager
def _api_and_engine(tmp_path: Path, api_config: str, engine_config: str):
    """An API-only and an engine-only replica on one home; `{api_port}` in engine_config is the API's port."""
    home = tmp_path / "shared-home"
    api = _replica(tmp_path / "api", home, "api", api_config)
    engine = _replica(tmp_path / "engine", home, "engine", engine_config.format(api_port=api.port))
    api.start()
    try:
        engine.start()
        try:
            yield api, engine
        finally:
            engine.stop()
    finally:
        api.stop()


def _finished(server, name: str, sync_nodes: bool = False):
    remote = remote_for(server)
    return remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                       poll_interval=timedelta(seconds=0.5), sync_nodes=sync_nodes)


def _status(home: Path) -> str:
    return subprocess.run([sys.executable, "-m", "flytelite.cli", "status", "--home", str(home),
                           *config_args_for(home)], capture_output=True, text=True, check=True, timeout=60).stdout


def _rows(status: str) -> list[list[str]]:
    """The cells of each replica's row in `flytelite status` (between the header and the summary line)."""
    lines = status.splitlines()
    end = next(i for i, line in enumerate(lines) if " replica(s); " in line)
    return [line.split() for line in lines[1:end]]


def _scheduler_leader(status: str) -> str | None:
    """The replica id on the `scheduler leader:` line, None while nobody leads."""
    match = re.search(r"^scheduler leader: (\S+)$", status, re.MULTILINE)
    return match.group(1) if match else None


def test_engine_replicas_share_executions_and_take_over_from_a_dead_one(tmp_path):
    home = tmp_path / "shared-home"
    api = _replica(tmp_path / "api", home, "api")
    engines = [_replica(tmp_path / f"engine{i}", home, "engine") for i in range(2)]
    api.start()
    for engine in engines:
        engine.start()
    try:
        roles = [row[1] for row in _rows(_status(home))]
        assert sorted(roles) == ["api", "engine", "engine"], roles
        code = copy_workflows(tmp_path / "wf", "restart.py")
        marks = [tmp_path / f"marks{i}" for i in range(EXECUTIONS)]
        # The slow tasks run until the victim is dead (at most 5 minutes): its leases are counted meanwhile.
        release = tmp_path / "release"
        names = [run_remote(api, code, "restart.py", "restart_wf", "--marker_dir", str(m), "--seconds", "300",
                            "--release", str(release)) for m in marks]
        # Kill an engine replica while slow tasks run (after `first` succeeded everywhere).
        wait_for(lambda: all(list(m.glob("slow-*")) for m in marks), "every execution's slow task to start")
        leases = {int(row[3]): int(row[-1]) for row in _rows(_status(home))}
        victim = max(engines, key=lambda e: leases[e.proc.pid])
        moved = leases[victim.proc.pid]
        assert moved > 0, leases
        victim.stop(sig=9)
        killed_at = time.monotonic()
        release.touch()
        remote = remote_for(api)
        for name in names:
            ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                             poll_interval=timedelta(seconds=0.5))
            assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (name, ex.error)
            assert ex.outputs["o0"] == 20
        print(f"\n[replicas] {moved} of {EXECUTIONS} executions moved; all done "
              f"{time.monotonic() - killed_at:.1f}s after the SIGKILL (lease 3 s)")
        for m in marks:
            # A task that had succeeded never runs again; the one running on the dead replica's machine is
            # adopted by the surviving replica (same machine), or retried after a system error.
            assert len(list(m.glob("first-*"))) == 1 and len(list(m.glob("last-*"))) == 1, sorted(m.iterdir())
            assert 1 <= len(list(m.glob("slow-*"))) <= 2, sorted(m.iterdir())
        status = _status(home)
        assert "0 waiting for an engine replica" in status, status
    finally:
        for server in (api, *engines):
            server.stop()


def test_on_postgresql_a_new_execution_reaches_an_engine_replica_through_notify(tmp_path):
    """With resyncs (and lease renewals, which also claim free executions) an hour apart, only
    LISTEN/NOTIFY can bring the API replica's new execution to the engine replica: the execution
    finishing proves the wake-up crossed processes."""
    if not os.environ.get(PG_ENV):
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; run with --db=postgresql")
    config = "engine:\n  resync_seconds: 3600\n  lease_seconds: 10800\n"
    with _api_and_engine(tmp_path, config, config) as (api, _):
        name = run_remote(api, copy_workflows(tmp_path / "wf", "hello.py"), "hello.py", "hello_wf")
        ex = _finished(api, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error


def test_an_engine_replica_gives_tasks_the_public_url_of_the_api(tmp_path):
    """`public_url` tells an engine-only replica (which serves no port) where the API is: its task
    processes call it and its log links point there."""
    with _api_and_engine(tmp_path, CONFIG, CONFIG + "public_url: http://localhost:{api_port}/\n") as (api, _):
        name = run_remote(api, copy_workflows(tmp_path / "wf", "platform_env.py"), "platform_env.py", "platform_wf")
        ex = _finished(api, name, sync_nodes=True)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == f"localhost:{api.port}"
        logs = [log.uri for node in ex.node_executions.values() for t in node.task_executions for log in t.closure.logs]
        assert logs and all(uri.startswith(f"http://localhost:{api.port}/logs/") for uri in logs), logs


EVERY_3S = 'Schedule("when", cron_schedule=Schedule.CronSchedule("@every 3s", None))'
# A lease long enough that a busy machine does not move the leadership before the SIGKILL.
SCHEDULER_CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 5\n"
LAUNCHED = re.compile(r": launched (\S+) for ")


def test_one_engine_replica_leads_the_scheduler_and_another_takes_over_when_it_dies(tmp_path):
    """A schedule firing every 3 s (flytekit refuses fixed rates under a minute; Flyte's `@every` is one)
    keeps firing after the leading engine replica is SIGKILLed: no slot is missed, none launched twice."""
    home = tmp_path / "shared-home"
    api = _replica(tmp_path / "api", home, "api")
    engines = [_replica(tmp_path / f"engine{i}", home, "engine", SCHEDULER_CONFIG) for i in range(2)]
    for server in (api, *engines):
        server.start()
    try:
        wait_for(lambda: _scheduler_leader(_status(home)) is not None, "an engine replica to lead the scheduler")
        status = _status(home)
        pids = {row[0]: int(row[3]) for row in _rows(status)}
        leader_id = _scheduler_leader(status)
        leader = next(e for e in engines if e.proc.pid == pids[leader_id])
        survivor = next(e for e in engines if e is not leader)
        survivor_id = next(rid for rid, pid in pids.items() if pid == survivor.proc.pid)

        remote = remote_for(api)
        name = register_scheduled(api, tmp_path / "proj", EVERY_3S)
        wait_for(lambda: len(scheduled_executions(remote, name)) >= 3, "three slots from the first leader", 90)
        assert not LAUNCHED.search(survivor.log_text()), "an engine replica that does not lead launched"

        leader.stop(sig=9)
        killed_at = datetime.now(timezone.utc)
        wait_for(lambda: _scheduler_leader(_status(home)) == survivor_id, "the other replica to lead", 60)
        # Slots well after the SIGKILL: only the survivor can have launched them.
        wait_for(lambda: scheduled_at(scheduled_executions(remote, name)[-1]) > killed_at + timedelta(seconds=9),
                  "the schedule to fire from the surviving replica", 90)
        executions = scheduled_executions(remote, name)
    finally:
        for server in (api, *engines):
            server.stop()

    times = [scheduled_at(e) for e in executions]
    assert all(later - earlier == timedelta(seconds=3) for earlier, later in zip(times[:-1], times[1:], strict=True)), times
    launched = {"leader": LAUNCHED.findall(leader.log_text()), "survivor": LAUNCHED.findall(survivor.log_text())}
    twice = [n for n, count in Counter(launched["leader"] + launched["survivor"]).items() if count > 1]
    assert not twice, f"launched twice: {twice}"
    assert launched["leader"] and launched["survivor"], launched
    assert f"replica {survivor_id} now leads 'scheduler'" in survivor.log_text()
    print(f"\n[scheduler leader] {len(launched['leader'])} slot(s) from the first leader, "
          f"{len(launched['survivor'])} from the replica that took over")
