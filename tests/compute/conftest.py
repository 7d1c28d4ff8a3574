"""The compute plugins against the real engines: `make test-compute` builds a virtualenv with flytekit, its
Spark, Ray, Dask and PyTorch plugins and the engines themselves, and points FLYTELITE_COMPUTE_PYTHON at its
interpreter. That venv's `pyflyte run --remote` registers and launches (the plugins' task types are serialized
by the client), and the server runs the tasks with that interpreter (`images: {default: …}`). Without the
variable these tests skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.attempts import attempts_processes  # noqa: F401 - the compute tests import it from here
from tests.e2e.flyte_cli import EXECUTION_URL, remote_for

PYTHON = os.environ.get("FLYTELITE_COMPUTE_PYTHON", "")
FLOWS = Path(__file__).parent / "workflows"
NO_ENGINES = pytest.mark.skipif(not PYTHON, reason="FLYTELITE_COMPUTE_PYTHON is not set: `make test-compute` "
                                                   "builds the engines' venv and runs these tests with it")


def compute_config(**extra) -> str:
    return yaml.safe_dump({"images": {"default": PYTHON}, **extra})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server whose tasks run in the engines' venv, for a test module."""
    server = make_server(tmp_path_factory.mktemp("compute"), compute_config())
    server.start()
    yield server
    server.stop()


def run(server, tmp_path: Path, file: str, workflow: str, *inputs: str) -> str:
    """`pyflyte run --remote` with the engines' venv; the execution's name."""
    folder = tmp_path / "wf"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FLOWS / file, folder / file)
    pyflyte = str(Path(PYTHON).parent / "pyflyte")
    proc = subprocess.run([pyflyte, "--config", str(server.config_path), "run", "--remote", "--project",
                           "flytesnacks", "--domain", "development", file, workflow, *inputs],
                          cwd=folder, env=server.client_env(), capture_output=True, text=True, timeout=300)
    match = EXECUTION_URL.search(proc.stdout + proc.stderr)
    assert match, f"pyflyte run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return match.group(3)


def finished(server, name: str, timeout: float = 600):
    remote = remote_for(server)
    execution = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=timeout),
                            poll_interval=timedelta(seconds=1))
    return remote.sync_execution(execution, sync_nodes=True)


def succeeded(execution) -> None:
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
