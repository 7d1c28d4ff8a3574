"""MPI tasks as the MPI operator's launcher runs them: flytekit's mpirun line, its ranks started by Open MPI."""

from __future__ import annotations

import pytest

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_an_mpi_tasks_ranks_run_under_mpirun(server, tmp_path):
    name = run(server, tmp_path, "mpi_wf.py", "mpi_wf")
    execution = finished(server, name)
    succeeded(execution)
    assert execution.outputs["o0"] == "size=3"
    wait_for(lambda: not attempts_processes(name), "the ranks to exit", timeout=60)
