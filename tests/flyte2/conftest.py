"""Flyte 2 against flytelite with the real `flyte` SDK: `make test-flyte2` builds a virtualenv with the SDK at the
release pyproject.toml names ([tool.flytelite] flyte-sdk) and points FLYTELITE_FLYTE2_PYTHON at its interpreter,
which is both the client (scripts/flyte2_run.py) and the tasks' runtime (`images: {default: …}`). Without the variable these
tests skip."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from flytelite.testing import RunningServer, make_server

PYTHON = os.environ.get("FLYTELITE_FLYTE2_PYTHON", "")
HERE = Path(__file__).parent
DRIVER = HERE.parent.parent / "scripts" / "flyte2_run.py"
WORKFLOWS = HERE / "workflows"
NO_SDK = pytest.mark.skipif(not PYTHON, reason="FLYTELITE_FLYTE2_PYTHON is not set: `make test-flyte2` builds the "
                                               "flyte SDK's venv and runs these tests with it")
SUCCEEDED, FAILED, ABORTED, TIMED_OUT = 5, 6, 7, 8


def flyte2_config() -> str:
    return yaml.safe_dump({"images": {"default": PYTHON}})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server whose tasks run in the SDK's venv, for a test module."""
    server = make_server(tmp_path_factory.mktemp("flyte2"), flyte2_config())
    server.start()
    yield server
    server.stop()


def drive(server: RunningServer, task: str, inputs: dict, mode: str = "remote", file: str = "basics.py",
          timeout: float = 300, options: dict | None = None, expect_failure: bool = False,
          env: dict[str, str] | None = None) -> dict:
    """What scripts/flyte2_run.py printed of running `task` (see there; `options`: flyte.init's, `env`: variables
    besides this process's); fails the test with its output if it printed nothing. `expect_failure`: the script
    is to fail, and its output is returned."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("FLYTE", "UCTL"))}, **(env or {})}
    proc = subprocess.run([PYTHON, str(DRIVER), server.endpoint, str(WORKFLOWS / file), task, json.dumps(inputs),
                           mode, json.dumps(options or {})], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=WORKFLOWS)
    if expect_failure:
        assert proc.returncode != 0, proc.stdout
        return {"output": proc.stdout + proc.stderr}
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"flyte2_run.py failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1])


def run_phase(server: RunningServer, name: str) -> int:
    """The phase of run `name`'s root action, through flyteidl2's client."""
    from flyteidl2.common import identifier_pb2
    from flyteidl2.workflow import run_service_connect, run_service_pb2

    runs = run_service_connect.RunServiceClientSync(server.url)
    run_id = identifier_pb2.RunIdentifier(project="flytesnacks", domain="development", name=name)
    return runs.get_run_details(run_service_pb2.GetRunDetailsRequest(run_id=run_id)).details.action.status.phase
