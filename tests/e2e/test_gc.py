"""Retention on a real server home: `flytelite gc --older-than` removes finished executions past their age
with their rows, data, raw outputs, logs and cache entries; it keeps running executions, young ones, and
the data of an old execution whose cache entry a young execution hit. The server's own daily run (config
`gc`) does the same on its leader."""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from flytekit.exceptions.user import FlyteEntityNotExistException
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.cli import _open_state
from flytelite.retention import collect
from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for, wait_for

pytestmark = pytest.mark.e2e

P, D = "flytesnacks", "development"
WAIT = timedelta(seconds=120)


def _gc(server, older_than: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "flytelite.cli", "gc", "--older-than", older_than,
                           "--home", str(server.home), *server.extra_args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _state(server):
    config = server.extra_args[1] if server.extra_args else None
    return _open_state(argparse.Namespace(config=config, home=str(server.home)))


def _run(remote, plans, kind: str, name: str, tmp_path: Path, **inputs):
    ex = remote.execute(plans[kind], inputs={"marker_dir": str(tmp_path / "marks" / name), **inputs},
                        execution_name=name)
    return remote.wait(ex, timeout=WAIT, poll_interval=timedelta(seconds=0.3)) if kind != "gate" else ex


def _gone(remote, name: str) -> bool:
    try:
        remote.fetch_execution(name=name)
    except FlyteEntityNotExistException:
        return True
    return False


def _exec_dir(server, name: str) -> Path:
    return server.home / "blobs" / "metadata" / f"{P}-{D}-{name}"


def _cache_dirs(server) -> set[Path]:
    return {p.parent for p in (server.home / "blobs" / "catalog").rglob("outputs.pb")}


def test_gc_removes_old_executions_and_keeps_what_is_used(fresh_server, tmp_path):
    server = fresh_server
    code = copy_workflows(tmp_path / "wf", "replica_mix.py")
    pyflyte(server, "register", "--project", P, "--domain", D, "--version", "v1", "replica_mix.py", cwd=code)
    remote = remote_for(server)
    plans = {k: remote.fetch_launch_plan(name=f"replica_mix.mix_{k}", version="v1") for k in ("chain", "cache", "gate")}

    # Old: a plain chain, and two cached runs (entries for x=1 and x=2).
    old_chain = _run(remote, plans, "chain", "oldchain", tmp_path, seconds=0.0)
    old_hit_source = _run(remote, plans, "cache", "oldcache1", tmp_path, x=1)
    old_unhit = _run(remote, plans, "cache", "oldcache2", tmp_path, x=2)
    for ex in (old_chain, old_hit_source, old_unhit):
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert len(_cache_dirs(server)) == 2
    assert list((server.home / "logs").glob(f"{P}-{D}-oldchain/*.log"))
    cutoff = datetime.now(timezone.utc)

    # Young: a cache hit on x=1's entry; running: a gate that waits for its signal.
    young = _run(remote, plans, "cache", "younghit", tmp_path, x=1)
    assert young.closure.phase == WorkflowExecutionPhase.SUCCEEDED and young.outputs["o0"] == 100
    assert not (tmp_path / "marks" / "younghit").exists()  # a hit: the task did not run
    gate = _run(remote, plans, "gate", "gated", tmp_path)
    wait_for(lambda: remote.sync_execution(remote.fetch_execution(name="gated"), sync_nodes=True).node_executions,
             "the gate execution to start")

    # In-process on the server's home, so that the age is measured from this moment, not a CLI's start.
    now = datetime.now(timezone.utc)
    report = collect(_state(server), now - cutoff, now=now)
    assert sorted(report.executions) == [f"{P}/{D}/oldcache2", f"{P}/{D}/oldchain"], report
    assert report.kept_for_cache == [f"{P}/{D}/oldcache1"] and report.cache_entries == 1

    assert _gone(remote, "oldchain") and _gone(remote, "oldcache2")
    assert not _exec_dir(server, "oldchain").exists() and not _exec_dir(server, "oldcache2").exists()
    assert not (server.home / "logs" / f"{P}-{D}-oldchain").exists()
    # x=2's entry went (old, never hit); x=1's stays with its source execution, which the young hit uses.
    assert len(_cache_dirs(server)) == 1 and _exec_dir(server, "oldcache1").exists()
    assert remote.fetch_execution(name="oldcache1").closure.phase == WorkflowExecutionPhase.SUCCEEDED
    again = remote.sync_execution(remote.fetch_execution(name="younghit"), sync_nodes=True)
    assert again.outputs["o0"] == 100
    assert remote.fetch_execution(name="gated").closure.phase == WorkflowExecutionPhase.RUNNING

    # Nothing removed while the gate runs, however short the age; once it ends, a later gc takes it.
    out = _gc(server, "0s")
    assert "gated" not in out and _exec_dir(server, "gated").exists()
    assert _gone(remote, "younghit") and _gone(remote, "oldcache1") and not _cache_dirs(server)
    remote.set_signal("go", "gated", 1)
    finished = remote.wait(gate, timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    assert finished.outputs["o0"] == 2
    assert "removed flytesnacks/development/gated" in _gc(server, "0s")
    assert _gone(remote, "gated")


def test_server_collects_on_its_own(tmp_path):
    server = make_server(tmp_path / "srv", "gc:\n  older_than: 1s\n  interval_seconds: 0.5\n"
                         "engine:\n  lease_seconds: 2\n")
    server.start()
    try:
        code = copy_workflows(tmp_path / "wf", "replica_mix.py")
        pyflyte(server, "register", "--project", P, "--domain", D, "--version", "v1", "replica_mix.py", cwd=code)
        remote = remote_for(server)
        plans = {"chain": remote.fetch_launch_plan(name="replica_mix.mix_chain", version="v1")}
        ex = _run(remote, plans, "chain", "soongone", tmp_path, seconds=0.0)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED
        wait_for(lambda: _gone(remote, "soongone"), "the server's retention run to remove the execution", 60)
        assert not _exec_dir(server, "soongone").exists()
    finally:
        server.stop()
