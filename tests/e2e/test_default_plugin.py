"""Task types without a plugin of their own run as FlytePropeller runs them: on the default plugin when the task
carries a container (or a pod spec), the agents having been asked first and serving none of them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flytekit.models.core.execution import TaskExecutionPhase, WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.agents.test_agents import task_execution
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = make_server(tmp_path_factory.mktemp("default-plugin"))
    server.start()
    yield server
    server.stop()


def _finished(server, tmp_path, workflow: str, text: str):
    folder = copy_workflows(tmp_path / "wf", "task_types.py")
    name = run_remote(server, folder, "task_types.py", workflow, "--text", text)
    remote = remote_for(server)
    execution = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=300),
                            poll_interval=timedelta(seconds=1))
    return remote, remote.sync_execution(execution, sync_nodes=True)


def test_a_task_type_without_a_plugin_runs_its_container_and_a_pods_primary_container_runs(server, tmp_path):
    remote, execution = _finished(server, tmp_path, "task_types_wf", "hi")
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert [execution.outputs[f"o{i}"] for i in range(3)] == [
        "HI", "hi from the primary container", "hi with a pod template"]
    closures = [task_execution(server, execution.id.name, node).closure for node in ("n0", "n1", "n2")]
    types = {closure.task_type: closure.phase for closure in closures}
    assert types == {"flytelite_shout": TaskExecutionPhase.SUCCEEDED, "sidecar": TaskExecutionPhase.SUCCEEDED,
                     "python-task": TaskExecutionPhase.SUCCEEDED}


def test_a_pod_with_a_second_container_is_refused_naming_it(server, tmp_path):
    _, execution = _finished(server, tmp_path, "second_container_wf", "hi")
    assert execution.closure.phase == WorkflowExecutionPhase.FAILED
    message = execution.error.message
    assert "container 'secondary' (image 'alpine')" in message and "kubernetes" in message, message
