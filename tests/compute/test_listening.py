"""What the engines started for an attempt listen on: loopback only (Spark's driver and UI, a Ray head and two
worker nodes, a Dask scheduler with its workers and nannies, a PyTorchJob's store and replicas, an elastic job's
nodes and their agents' stores, MPI's ranks), but for the one listener Open MPI 4.1's mpirun gives no address
setting; and a Ray cluster of an attempt refuses calls without its token."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for
from tests.listening import descendants, exposed, listening

pytestmark = [pytest.mark.e2e, NO_ENGINES]
ENGINES = ("spark", "ray", "dask", "pytorch", "elastic", "mpi")


def _status(url: str, body: dict | None = None, token: str = "") -> int:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def _ray_refuses_calls_without_its_token(name: str) -> None:
    head = next(line for line in attempts_processes(name) if " --head " in line and "--dashboard-port=" in line)
    port = re.search(r"--dashboard-port=(\d+)", head).group(1)
    dashboard = f"http://127.0.0.1:{port}"
    job = {"entrypoint": "echo not the task", "submission_id": "intruder"}
    assert _status(f"{dashboard}/api/jobs/", job) == 401
    assert _status(f"{dashboard}/api/jobs/", job, token="0" * 64) == 403
    assert _status(f"{dashboard}/api/v0/nodes") == 401


def test_every_engine_listens_on_loopback_and_ray_wants_its_token(server, tmp_path):
    markers, journal = tmp_path / "markers", tmp_path / "journal"
    markers.mkdir()
    name = run(server, tmp_path, "listening_wf.py", "listening_wf", "--markers", str(markers), "--journal",
               str(journal))
    seen: dict[str, list] = {}
    for engine in ENGINES:
        wait_for(lambda engine=engine: f"start {engine}\n" in (journal.read_text() if journal.exists() else ""),
                 f"the {engine} task's engine to be up", timeout=300)
        pids = descendants(server.proc.pid) | {pid for pid, _ in attempts_processes(name, with_pids=True)}
        seen[engine] = listening(pids)
        if engine == "ray":
            _ray_refuses_calls_without_its_token(name)
        (markers / engine).touch()
    execution = finished(server, name)
    succeeded(execution)
    assert [execution.outputs[f"o{i}"] for i in range(6)] == [10, 309, 5, 3, 3, 2]
    for engine in ("spark", "ray", "dask", "pytorch", "elastic"):
        assert seen[engine] and exposed(seen[engine]) == [], engine
    # Open MPI 4.1's mpirun has no address setting for its out-of-band channel (docs/how-to/distributed-compute.md).
    assert seen["mpi"] and all(s.command.startswith("mpirun") for s in seen["mpi"] if not s.loopback), \
        exposed(seen["mpi"])
    wait_for(lambda: not attempts_processes(name), "the engines' processes to exit", timeout=60)
