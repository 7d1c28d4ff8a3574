"""A compute engine's task that cannot run here fails at once, saying why, before anything starts: the engine
is not installed in the task's environment (naming the package), the shape is larger than this machine (with
the figures), its config version or a field of it is unknown."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # The tasks' environment is a folder of its own holding only an interpreter (the project's, linked): whatever
    # engines are installed into .venv, this environment has none of their programs.
    folder = tmp_path_factory.mktemp("engine-refusals")
    interpreter = folder / "env" / "bin" / "python"
    interpreter.parent.mkdir(parents=True)
    interpreter.symlink_to(sys.executable)
    server = make_server(folder, f"images:\n  default: {interpreter}\n")
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("workflow, expected", [
    ("needs_dask_wf", "needs flytekitplugins-dask (with dask[distributed]) in its environment"),
    ("too_large_wf", "1000 Dask workers of 1 threads ask for 1000 cores; this machine has"),
    ("future_version_wf", "task type 'ray' version 7 is not supported; flytelite reads versions 0"),
    ("unknown_field_wf", "its custom config is not a flyteidl.plugins.SparkJob"),
])
def test_a_task_the_engine_cannot_run_fails_saying_why(server, tmp_path, workflow, expected):
    folder = copy_workflows(tmp_path / "wf", "engine_types.py")
    remote = remote_for(server)
    name = run_remote(server, folder, "engine_types.py", workflow)
    execution = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=120),
                            poll_interval=timedelta(seconds=0.5))
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    assert expected in execution.error.message, execution.error.message
    assert "BadTaskSpecification" in execution.error.code
