"""Compute-engine rows: a Spark, a Ray and a Dask task through a real flytelite server, each from its node's
QUEUED to SUCCEEDED, split into the engine's start (the launcher's "engine up" line: Ray's head and worker,
Dask's scheduler and workers; Spark's JVM starts inside the driver and is not told apart) and the rest, beside
the same workflow's `pyflyte run` (local) from the same venv, where flytekit starts the engine in-process.
And the real-task rows' 100-task chain of plain python tasks in that venv, whose flytekit loads the installed
plugins at import (numpy among them), beside the same chain in flytelite's own venv: warm workers stay on.

They need the engines' venv: `make test-compute` builds .venv-compute (FLYTELITE_COMPUTE_PYTHON names
another); without it the section says so in a row.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from benchmarks.common import Row, baseline
from benchmarks.server_client import BenchServer, execution_seconds, local_pyflyte_run, seconds
from benchmarks.workflows import real_wfs

CHECKOUT = Path(__file__).resolve().parent.parent
FILE = "compute_wfs.py"
ENGINE_UP = re.compile(r"\[flytelite\] engine up in ([0-9.]+) s")


def _python() -> Path:
    return Path(os.environ.get("FLYTELITE_COMPUTE_PYTHON") or CHECKOUT / ".venv-compute" / "bin" / "python")


def compute_rows(root: Path, runs: int) -> list[Row]:
    python = _python()
    if not python.exists():
        return [Row("compute rows: skipped", [], "",
                    note=f"no engines' venv at {python} (make test-compute)")]
    client = python.parent
    rows = []
    with BenchServer(root / "compute", f"images:\n  default: {python}\n") as server:
        for engine in ("spark", "ray", "dask"):
            total, up = [], []
            for _ in range(runs):
                name = server.pyflyte_run(FILE, f"{engine}_wf", client=client)
                server.wait(name)
                node = next(n for n in server.nodes(name) if n.id.node_id == "n0")
                total.append(seconds(node.closure.updated_at) - seconds(node.closure.created_at))
                log = server.server.home / "logs" / f"flytesnacks-development-{name}" / "n0-0.log"
                found = ENGINE_UP.search(log.read_text()) if log.exists() else None
                if found:
                    up.append(float(found.group(1)))
            local = []
            for i in range(runs):
                start = time.monotonic()
                local_pyflyte_run(root / f"compute-local-{engine}-{i}", FILE, f"{engine}_wf", client=client)
                local.append(time.monotonic() - start)
            split = [baseline("of which the engine's start", up, "s")] if up else []
            rows.append(Row(f"{engine.capitalize()} task: QUEUED to SUCCEEDED, engine started for the attempt",
                            total, "s", note="a cold process per attempt (engines are not forked warm)",
                            baselines=[*split, baseline("pyflyte run (local), whole command", local, "s")]))
        with_plugins = _chains(server, runs, client)
        unsafe = "forking it is unsafe" in server.server.log_text()
    with BenchServer(root / "compute-plain") as server:
        plain = _chains(server, runs, None)
    rows.append(Row(f"{real_wfs.CHAIN}-task chain, task environment with the compute plugins installed",
                    with_plugins, "s", note="warm workers OFF: the zygote was unsafe" if unsafe else "warm workers on",
                    baselines=[baseline("flytelite's own venv", plain, "s")]))
    return rows


def _chains(server: BenchServer, runs: int, client: Path | None) -> list[float]:
    return [execution_seconds(server.wait(server.pyflyte_run("real_wfs.py", "real_chain", client=client)))
            for _ in range(runs)]
