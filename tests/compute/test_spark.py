"""Spark tasks submitted with spark-submit, as the Spark operator submits a SparkApplication."""

from __future__ import annotations

import pytest
from flytekit.models.core.execution import ExecutionError, WorkflowExecutionPhase

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_flytesnacks_pyspark_pi_runs_on_spark(server, tmp_path):
    name = run(server, tmp_path, "spark_wf.py", "my_spark")
    execution = finished(server, name)
    succeeded(execution)
    assert execution.outputs["o0"] in (0.0, 4.0)  # one sample of pi, as the example takes
    wait_for(lambda: not attempts_processes(name), "the Spark drivers to exit", timeout=60)


def test_the_tasks_spark_conf_reaches_its_session_on_a_local_master(server, tmp_path):
    execution = finished(server, run(server, tmp_path, "spark_wf.py", "conf_wf"))
    succeeded(execution)
    assert execution.outputs["o0"] == "seen local[1]"


def test_a_failure_in_the_users_spark_code_is_a_user_error(server, tmp_path):
    execution = finished(server, run(server, tmp_path, "spark_wf.py", "failing_wf"))
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert execution.error.kind == ExecutionError.ErrorKind.USER
    assert "counted 3, as expected, and failed on purpose" in execution.error.message
