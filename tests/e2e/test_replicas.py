"""Several flytelite processes on one database: an API-only replica takes the requests, two engine
replicas share the executions through their leases, and when one engine replica is SIGKILLed the other
takes its executions over; every execution ends once, and no task that had succeeded runs again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.testing import PG_ENV, config_args_for, make_server
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
# Short leases so that a takeover happens within the test; resyncs often, so the API replica's new
# executions reach an engine replica quickly.
CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 3\n"
EXECUTIONS = 4


def _replica(folder: Path, home: Path, role: str):
    server = make_server(folder, CONFIG, home=home)
    server.role = role
    return server


def _status(home: Path) -> str:
    return subprocess.run([sys.executable, "-m", "flytelite.cli", "status", "--home", str(home),
                           *config_args_for(home)], capture_output=True, text=True, check=True, timeout=60).stdout


def _wait_for(predicate, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_engine_replicas_share_executions_and_take_over_from_a_dead_one(tmp_path):
    home = tmp_path / "shared-home"
    api = _replica(tmp_path / "api", home, "api")
    engines = [_replica(tmp_path / f"engine{i}", home, "engine") for i in range(2)]
    api.start()
    for engine in engines:
        engine.start()
    try:
        roles = [line.split()[1] for line in _status(home).splitlines()[1:-1]]
        assert sorted(roles) == ["api", "engine", "engine"], roles
        code = copy_workflows(tmp_path / "wf", "restart.py")
        marks = [tmp_path / f"marks{i}" for i in range(EXECUTIONS)]
        names = [run_remote(api, code, "restart.py", "restart_wf", "--marker_dir", str(m), "--seconds", "6")
                 for m in marks]
        # Kill an engine replica while slow tasks run (after `first` succeeded everywhere).
        _wait_for(lambda: all(list(m.glob("slow-*")) for m in marks), "every execution's slow task to start")
        leases = {int(line.split()[3]): int(line.split()[-1]) for line in _status(home).splitlines()[1:-1]}
        victim = max(engines, key=lambda e: leases[e.proc.pid])
        moved = leases[victim.proc.pid]
        assert moved > 0, leases
        victim.stop(sig=9)
        killed_at = time.monotonic()
        remote = FlyteRemote(FlyteConfig.auto(str(api.config_path)), default_project="flytesnacks",
                             default_domain="development")
        for name in names:
            ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                             poll_interval=timedelta(seconds=0.5))
            assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (name, ex.error)
            assert ex.outputs["o0"] == 20
        print(f"\n[replicas] {moved} of {EXECUTIONS} executions moved; all done "
              f"{time.monotonic() - killed_at:.1f}s after the SIGKILL (lease 3 s, slow tasks 6 s)")
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
    home = tmp_path / "shared-home"
    config = "engine:\n  resync_seconds: 3600\n  lease_seconds: 10800\n"
    api = make_server(tmp_path / "api", config, home=home)
    engine = make_server(tmp_path / "engine", config, home=home)
    api.role, engine.role = "api", "engine"
    api.start()
    engine.start()
    try:
        code = copy_workflows(tmp_path / "wf", "hello.py")
        name = run_remote(api, code, "hello.py", "hello_wf")
        remote = FlyteRemote(FlyteConfig.auto(str(api.config_path)), default_project="flytesnacks",
                             default_domain="development")
        ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                         poll_interval=timedelta(seconds=0.5))
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    finally:
        api.stop()
        engine.stop()


def test_an_engine_replica_gives_tasks_the_public_url_of_the_api(tmp_path):
    """`public_url` tells an engine-only replica (which serves no port) where the API is: its task
    processes call it and its log links point there."""
    home = tmp_path / "shared-home"
    api = make_server(tmp_path / "api", CONFIG, home=home)
    engine = make_server(tmp_path / "engine", CONFIG + f"public_url: http://localhost:{api.port}/\n", home=home)
    api.role, engine.role = "api", "engine"
    api.start()
    engine.start()
    try:
        code = copy_workflows(tmp_path / "wf", "platform_env.py")
        name = run_remote(api, code, "platform_env.py", "platform_wf")
        remote = FlyteRemote(FlyteConfig.auto(str(api.config_path)), default_project="flytesnacks",
                             default_domain="development")
        ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                         poll_interval=timedelta(seconds=0.5), sync_nodes=True)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == f"localhost:{api.port}"
        logs = [log.uri for node in ex.node_executions.values() for t in node.task_executions for log in t.closure.logs]
        assert logs and all(uri.startswith(f"http://localhost:{api.port}/logs/") for uri in logs), logs
    finally:
        api.stop()
        engine.stop()
