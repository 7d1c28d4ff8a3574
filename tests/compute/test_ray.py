"""Ray tasks submitted as Ray jobs to a head and worker groups started for each attempt, as KubeRay runs a
RayJob."""

from __future__ import annotations

import pytest

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_flytesnacks_ray_example_runs_as_a_ray_job(server, tmp_path):
    name = run(server, tmp_path, "ray_wf.py", "ray_workflow", "--n", "10")
    execution = finished(server, name)
    succeeded(execution)
    assert execution.outputs["o0"] == [i * i for i in range(10)]
    wait_for(lambda: not attempts_processes(name), "the Ray cluster's processes to exit", timeout=60)


def test_a_head_and_two_workers_start_five_times_in_a_row_and_the_job_sees_them_and_its_runtime_env(server,
                                                                                                    tmp_path):
    for _ in range(5):
        execution = finished(server, run(server, tmp_path, "ray_wf.py", "nodes_wf"))
        succeeded(execution)
        assert execution.outputs["o0"] == "3 seen"
        attempts = execution.node_executions["n0"].task_executions
        assert len(attempts) == 1, [a.closure.error for a in attempts]
        logs = {log.name for log in attempts[0].closure.logs}
        assert {"Job submitter log (ray)", "head log (ray)", "ray-group-0 log (ray)", "ray-group-1 log (ray)"} <= logs


def test_an_ordinary_task_that_starts_ray_itself_runs(server, tmp_path):
    execution = finished(server, run(server, tmp_path, "ray_wf.py", "ray_inside_wf", "--n", "4"))
    succeeded(execution)
    assert execution.outputs["o0"] == 0 + 1 + 4 + 9
