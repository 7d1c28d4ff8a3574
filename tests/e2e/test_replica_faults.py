"""Proof under faults: three replicas on PostgreSQL and S3 run 50 mixed executions (chains, map tasks,
dynamic workflows, a serialized cache, gates) and a schedule while replicas are SIGKILLed at random
moments and started again on the same home. Every execution ends once with the right outputs, no task
that had succeeded runs again, no schedule slot fires twice, no node stays RUNNING."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.models.core.identifier import Identifier, ResourceType

from flytelite.testing import PG_ENV, make_server
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for
from tests.scheduler.test_schedule_e2e import scheduled_at, scheduled_executions

pytestmark = pytest.mark.e2e

P, D, VERSION = "flytesnacks", "development", "v1"
# Short leases, so the executions of a killed replica move within the test.
CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 3\n"
KILLS = 6
SEED = 13
TERMINAL = {WorkflowExecutionPhase.SUCCEEDED, WorkflowExecutionPhase.FAILED, WorkflowExecutionPhase.ABORTED,
            WorkflowExecutionPhase.TIMED_OUT}


def _with_live(replicas, call, timeout: float = 60):
    """`call(remote)` on a replica that is up: one may be down or just restarting."""
    deadline = time.monotonic() + timeout
    while True:
        live = [r for r in replicas if r.proc is not None]
        try:
            return call(remote_for(random.choice(live)))
        except (grpc.RpcError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _launch(remote, tmp_path: Path) -> list[tuple[str, str, object]]:
    """The 50 executions: (execution name, kind, expected output); each with a marker folder of its own."""
    plans = {kind: remote.fetch_launch_plan(name=f"replica_mix.mix_{kind}", version=VERSION)
             for kind in ("chain", "map", "dynamic", "cache", "gate")}
    todo = ([("chain", {"seconds": 2.0}, 4)] * 20 + [("map", {"xs": [0, 1, 2, 3, 4]}, [0, 1, 4, 9, 16])] * 8
            + [("dynamic", {"n": 3}, [1, 2, 3])] * 8 + [("gate", {}, 8)] * 6)
    todo += [("cache", {"x": i % 2}, (i % 2) * 100) for i in range(8)]
    launched = []
    for i, (kind, inputs, expected) in enumerate(todo):
        name = f"mix{i:02d}{kind[:3]}"
        remote.execute(plans[kind], inputs={"marker_dir": str(tmp_path / "marks" / name), **inputs},
                       execution_name=name)
        launched.append((name, kind, expected))
    return launched


def _kill_loop(replicas, rng: random.Random, gates: list[str]) -> list[str]:
    """SIGKILL a random replica KILLS times, starting it again after a moment; answers the gates midway."""
    happened = []
    for k in range(KILLS):
        time.sleep(rng.uniform(1.0, 3.0))
        victim = rng.choice(replicas)
        victim.stop(sig=9)
        happened.append(f"killed replica {replicas.index(victim)} at {time.strftime('%X')}")
        time.sleep(rng.uniform(0.2, 1.5))
        victim.start()
        if k == KILLS // 2:
            for name in gates:
                _with_live(replicas, lambda r, name=name: r.set_signal("go", name, 7))
    return happened


def _wait_all(replicas, names: list[str], timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    done = {}
    while time.monotonic() < deadline and len(done) < len(names):
        for name in names:
            if name not in done:
                ex = _with_live(replicas, lambda r, name=name: r.fetch_execution(name=name))
                if ex.closure.phase in TERMINAL:
                    done[name] = ex
        time.sleep(0.5)
    missing = sorted(set(names) - set(done))
    assert not missing, f"executions not finished within {timeout}s: {missing}"
    return done


def test_three_replicas_under_sigkills_run_every_execution_once(tmp_path, s3):
    if not os.environ.get(PG_ENV):
        pytest.skip("the fault test runs on PostgreSQL (run with --db=postgresql)")
    home = tmp_path / "home"
    replicas = [make_server(tmp_path / f"replica{i}", CONFIG + s3.server_config("faults"), home=home)
                for i in range(3)]
    for replica in replicas:
        with open(replica.config_path, "a") as f:
            f.write(s3.client_config())
        replica.start()
    try:
        code = copy_workflows(tmp_path / "wf", "replica_mix.py")
        pyflyte(replicas[0], "register", "--project", P, "--domain", D, "--version", VERSION,
                "--activate-launchplans", "replica_mix.py", cwd=code)
        launched = _launch(remote_for(replicas[1]), tmp_path)
        gates = [name for name, kind, _ in launched if kind == "gate"]
        happened = _kill_loop(replicas, random.Random(SEED), gates)
        running = _with_live(replicas, lambda r: sum(
            r.fetch_execution(name=name).closure.phase not in TERMINAL for name, _, _ in launched))
        happened.append(f"{running} executions still running after the last kill")
        schedule = Identifier(ResourceType.LAUNCH_PLAN, P, D, "mix_every_3s", VERSION)
        _with_live(replicas, lambda r: r.deactivate_launchplan(schedule))
        finished = _wait_all(replicas, [name for name, _, _ in launched])

        remote = remote_for(replicas[0])
        for name, _, expected in launched:
            ex = remote.sync_execution(finished[name], sync_nodes=True)
            assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (name, ex.error, happened)
            assert ex.outputs["o0"] == expected, name
            stuck = [n.id.node_id for n in ex.node_executions.values() if n.closure.phase in (1, 2, 4)]
            assert not stuck, (name, stuck)

        # No task that had succeeded ran again: one "done" file per task of each execution ...
        marks = tmp_path / "marks"
        for name, kind, _ in launched:
            if kind != "cache":
                done = Counter(f.name.rsplit("-", 1)[0] for f in (marks / name).glob("done-*"))
                assert done and set(done.values()) == {1}, (name, done, happened)
        # ... and the serialized cache computed each key once over the executions that share it.
        cached = Counter(f.name.rsplit("-", 1)[0] for f in marks.glob("mix*cac/done-*"))
        assert cached == {"done-cached0": 1, "done-cached1": 1}, (cached, happened)

        # The schedule fired slot after slot, each slot once, whichever replica led the scheduler.
        fired = scheduled_executions(remote, "mix_every_3s")
        times = [scheduled_at(e) for e in fired]
        assert len(fired) >= 3, happened
        assert all(later - earlier == timedelta(seconds=3) for earlier, later in zip(times[:-1], times[1:], strict=True)), times
        for ex in _wait_all(replicas, [e.id.name for e in fired]).values():
            assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.id.name
        print(f"\n[faults] {len(launched)} executions and {len(fired)} scheduled ones; " + "; ".join(happened))
    finally:
        for replica in replicas:
            replica.stop()
