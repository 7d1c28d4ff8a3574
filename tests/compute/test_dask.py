"""Dask tasks on a Dask cluster started for each attempt, as the Dask operator runs a DaskJob."""

from __future__ import annotations

import pytest

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_a_dask_task_runs_on_its_own_scheduler_and_workers_which_are_gone_after(server, tmp_path):
    name = run(server, tmp_path, "dask_wf.py", "dask_wf", "--size", "1000")
    execution = finished(server, name)
    succeeded(execution)
    assert 0.3 < execution.outputs["o0"] < 0.7
    assert execution.outputs["o1"] == 1
    logs = {log.name for n in execution.node_executions.values() for t in n.task_executions
            for log in t.closure.logs}
    assert {"Job runner log (dask)", "scheduler log (dask)", "worker-0 log (dask)", "worker-1 log (dask)"} <= logs
    wait_for(lambda: not attempts_processes(name), "the Dask clusters' processes to exit", timeout=60)
