"""Engines and faults: a server SIGKILLed while a Spark, a Ray and a Dask task run adopts them when it starts
again (no second cluster, no second run); an aborted execution stops its engines, and either way no process of
theirs is left; a worker lost while the task runs is a system error, and the retry runs."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from flytekit.models.core.execution import ExecutionError, WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.compute.conftest import NO_ENGINES, attempts_processes, compute_config, finished, run, succeeded
from tests.e2e.flyte_cli import remote_for, wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]
ENGINES = {"spark", "ray", "dask"}


def _started(journal: Path) -> list[str]:
    return journal.read_text().split("\n")[:-1] if journal.exists() else []


def _engines_running(tmp_path: Path, server) -> tuple[str, Path, Path]:
    marker, journal = tmp_path / "go", tmp_path / "journal"
    name = run(server, tmp_path, "engines_wf.py", "engines_wf", "--marker", str(marker), "--journal", str(journal))
    wait_for(lambda: {line.split()[1] for line in _started(journal)} == ENGINES, "the three tasks to start",
             timeout=300)
    return name, marker, journal


def test_a_server_killed_while_engines_run_adopts_them_and_runs_nothing_twice(tmp_path):
    (tmp_path / "server").mkdir()
    server = make_server(tmp_path / "server", compute_config())
    server.start()
    try:
        name, marker, journal = _engines_running(tmp_path, server)
        server.stop(sig=signal.SIGKILL)
        server.start()
        marker.touch()
        execution = finished(server, name)
    finally:
        server.stop()
    succeeded(execution)
    assert [execution.outputs[f"o{i}"] for i in range(3)] == [10, 9, 5]
    assert sorted(_started(journal)) == ["start dask", "start ray", "start spark"]
    wait_for(lambda: not attempts_processes(name), "the engines' processes to exit", timeout=60)


def test_an_aborted_execution_stops_its_engines(server, tmp_path):
    name, _, _ = _engines_running(tmp_path, server)
    remote = remote_for(server)
    remote.terminate(remote.fetch_execution(name=name), "no longer needed")
    execution = finished(server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.ABORTED
    wait_for(lambda: not attempts_processes(name), "the engines' processes to exit", timeout=60)


def test_a_worker_lost_mid_task_is_a_system_error_and_the_retry_runs(server, tmp_path):
    marker, journal = tmp_path / "never", tmp_path / "journal"
    name = run(server, tmp_path, "engines_wf.py", "lost_worker_wf", "--marker", str(marker), "--journal",
               str(journal))
    wait_for(lambda: _started(journal), "the first attempt to start", timeout=300)
    worker = next(line for line in attempts_processes(name, with_pids=True) if " worker " in line[1])
    os.kill(worker[0], signal.SIGKILL)
    execution = finished(server, name)
    succeeded(execution)
    assert execution.outputs["o0"] == 5
    attempts = execution.node_executions["n0"].task_executions
    assert len(attempts) == 2
    error = attempts[0].closure.error
    assert error.kind == ExecutionError.ErrorKind.SYSTEM, error
    assert "the worker-" in error.message and "exited with code -9 while the task ran" in error.message, error.message
