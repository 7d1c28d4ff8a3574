"""Helpers of the fault tests (test_replica_faults.py, test_crash_loop.py): launch a mix of executions from
workflows/replica_mix.py, SIGKILL servers and start them again on the same home, wait through the restarts,
and check that every execution ended once, right, with no succeeded task run twice."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from tests.e2e.flyte_cli import remote_for

VERSION = "v1"
KINDS = ("chain", "map", "dynamic", "cache", "gate")


TERMINAL = {WorkflowExecutionPhase.SUCCEEDED, WorkflowExecutionPhase.FAILED, WorkflowExecutionPhase.ABORTED,
            WorkflowExecutionPhase.TIMED_OUT}


def with_live(replicas, call, timeout: float = 60):
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


def launch(remote, tmp_path: Path, chains: int = 20, maps: int = 8, dynamics: int = 8, gates: int = 6,
           cached: int = 8) -> list[tuple[str, str, object]]:
    """The executions: (execution name, kind, expected output); each with a marker folder of its own."""
    plans = {kind: remote.fetch_launch_plan(name=f"replica_mix.mix_{kind}", version=VERSION)
             for kind in KINDS}
    todo = ([("chain", {"seconds": 2.0}, 4)] * chains + [("map", {"xs": [0, 1, 2, 3, 4]}, [0, 1, 4, 9, 16])] * maps
            + [("dynamic", {"n": 3}, [1, 2, 3])] * dynamics + [("gate", {}, 8)] * gates)
    todo += [("cache", {"x": i % 2}, (i % 2) * 100) for i in range(cached)]
    launched = []
    for i, (kind, inputs, expected) in enumerate(todo):
        name = f"mix{i:02d}{kind[:3]}"
        remote.execute(plans[kind], inputs={"marker_dir": str(tmp_path / "marks" / name), **inputs},
                       execution_name=name)
        launched.append((name, kind, expected))
    return launched


def kill_loop(replicas, rng: random.Random, gates: list[str], kills: int, pause: tuple[float, float] = (1.0, 3.0)
              ) -> list[str]:
    """SIGKILL a random replica `kills` times, starting it again after a moment; answers the gates midway."""
    happened = []
    for k in range(kills):
        time.sleep(rng.uniform(*pause))
        victim = rng.choice(replicas)
        victim.stop(sig=9)
        happened.append(f"killed replica {replicas.index(victim)} at {time.strftime('%X')}")
        time.sleep(rng.uniform(0.2, 1.5))
        victim.start()
        if k == kills // 2:
            for name in gates:
                with_live(replicas, lambda r, name=name: r.set_signal("go", name, 7))
    return happened


def wait_all(replicas, names: list[str], timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    done = {}
    while time.monotonic() < deadline and len(done) < len(names):
        for name in names:
            if name not in done:
                ex = with_live(replicas, lambda r, name=name: r.fetch_execution(name=name))
                if ex.closure.phase in TERMINAL:
                    done[name] = ex
        time.sleep(0.5)
    missing = sorted(set(names) - set(done))
    assert not missing, f"executions not finished within {timeout}s: {missing}"
    return done


def check_once(replicas, launched, finished: dict, marks: Path, happened: list[str]) -> None:
    """Every execution succeeded with its output and no node left active; every task that succeeded ran
    to its end once; the serialized cache computed each key once over the executions that share it."""
    remote = remote_for(replicas[0])
    for name, _, expected in launched:
        ex = remote.sync_execution(finished[name], sync_nodes=True)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (name, ex.error, happened)
        assert ex.outputs["o0"] == expected, name
        stuck = [n.id.node_id for n in ex.node_executions.values() if n.closure.phase in (1, 2, 4)]
        assert not stuck, (name, stuck)
    for name, kind, _ in launched:
        if kind != "cache":
            done = Counter(f.name.rsplit("-", 1)[0] for f in (marks / name).glob("done-*"))
            assert done and set(done.values()) == {1}, (name, done, happened)
    keys = {f"done-cached{x}" for name, kind, _ in launched if kind == "cache" for x in (0, 1)}
    cached = Counter(f.name.rsplit("-", 1)[0] for f in marks.glob("mix*cac/done-*"))
    assert cached == dict.fromkeys(keys, 1), (cached, happened)
