"""Flyte 2 rows: the `flyte` SDK's runs through a real flytelite server, each action a process of the SDK's venv
(`make test-flyte2` builds it; FLYTELITE_FLYTE2_PYTHON names another). A run's time is its root action's, from
its process's start to its end, as the server reports it (ActionStatus.duration_ms).

- one empty task: the floor of an action (a cold `a0` process: the interpreter, the SDK, the code bundle, the
  inputs and outputs);
- a chain of 100 empty tasks, awaited one after another, and the time per action beyond the root's own floor,
  against that floor (goal: within 1.3x);
- a 1,000-item `flyte.map` of empty tasks, once.
Baselines: flyte-benchmarks' published Flyte 2 figures (chain of 100: 16 s; fan-out of 1,000: 29 s, on an
8 GiB orchestrator pod of a Kubernetes cluster), and the same shapes in Flyte 1 in the real-task rows.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

from benchmarks.common import Row
from benchmarks.server_client import BenchServer

CHECKOUT = Path(__file__).resolve().parent.parent
RUNNER = CHECKOUT / "scripts" / "flyte2_run.py"
FILE = "flyte2_wfs.py"
CHAIN, FANOUT = 100, 1000


def flyte2_python() -> Path | None:
    named = os.environ.get("FLYTELITE_FLYTE2_PYTHON")
    if named:
        return Path(named)
    found = sorted(glob.glob(os.path.expanduser("~/.cache/flytelite-venvs/flyte2-*/bin/python")))
    return Path(found[-1]) if found else None


def flyte2_rows(root: Path, runs: int) -> list[Row]:
    python = flyte2_python()
    if python is None or not python.exists():
        return [Row("Flyte 2 rows: skipped", [], "", note="no flyte SDK venv (make test-flyte2 builds one)")]
    with BenchServer(root / "flyte2", f"images:\n  default: {python}\n") as server:
        def run(task: str, **inputs) -> float:
            return _run(python, server, task, inputs)

        floor = [run("single") for _ in range(runs)]
        chain = [run("chain", n=CHAIN) for _ in range(runs)]
        fanout = [run("fanout", n=FANOUT)]
    per_action = [(c - min(floor)) / CHAIN for c in chain]
    floor_row = Row("Flyte 2: one empty task (an action's floor)", floor, "s")
    return [
        floor_row,
        Row(f"Flyte 2: chain of {CHAIN} empty tasks", chain, "s", baselines=["Flyte 2 on Kubernetes (published): 16 s"]),
        Row("Flyte 2: chain, time per action", per_action, "s", goal=f"≤ 1.3 × the floor ({1.3 * floor_row.median:.2f} s)",
            baselines=[f"the floor: {floor_row.median:.2f} s"]).check("<=", 1.3 * floor_row.median),
        Row(f"Flyte 2: flyte.map of {FANOUT:,} empty tasks", fanout, "s",
            baselines=["Flyte 2 on Kubernetes (published): 29 s"]),
    ]


def _run(python: Path, server: BenchServer, task: str, inputs: dict) -> float:
    proc = subprocess.run([str(python), str(RUNNER), server.server.endpoint, str(server.workflows / FILE), task,
                           json.dumps(inputs), "remote"], capture_output=True, text=True, timeout=3600,
                          cwd=server.workflows)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{task} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    result = json.loads(lines[-1])
    if result.get("phase") != 5:
        raise RuntimeError(f"{task} did not succeed: {result}")
    return result["duration_ms"] / 1000
