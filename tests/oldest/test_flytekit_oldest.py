"""The oldest supported flytekit, as client and as task runtime, against today's flytelite.

`make test-oldest` builds a virtualenv with the release pinned in pyproject.toml (`[tool.flytelite]
oldest-flytekit`) and points FLYTELITE_OLDEST_PYTHON at its interpreter: that venv's `pyflyte run --remote`
registers and launches, the server runs the tasks with that interpreter (config `images: {default: …}`),
and that venv's FlyteRemote approves the gate. Without the variable the tests skip.
"""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from flyteidl.core import catalog_pb2
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.e2e.flyte_cli import EXECUTION_URL, remote_for, wait_for

OLD_PYTHON = os.environ.get("FLYTELITE_OLDEST_PYTHON", "")
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    not OLD_PYTHON, reason="FLYTELITE_OLDEST_PYTHON is not set: `make test-oldest` builds the oldest flytekit's "
                           "venv and runs these tests with it")]
FLOWS = Path(__file__).parent / "workflows"
P, D = "flytesnacks", "development"


@pytest.fixture(scope="module")
def old(tmp_path_factory):
    """The old venv's version, checked: the tests must not pass with today's flytekit by mistake."""
    version = subprocess.run([OLD_PYTHON, "-c", "import flytekit; print(flytekit.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert not version.startswith("1.16"), version
    return version


@pytest.fixture(scope="module")
def server(tmp_path_factory, old):
    server = make_server(tmp_path_factory.mktemp("oldest"), yaml.safe_dump({"images": {"default": OLD_PYTHON}}))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def code(tmp_path_factory):
    folder = tmp_path_factory.mktemp("oldest-wf")
    (folder / "oldest_flows.py").write_text((FLOWS / "oldest_flows.py").read_text())
    return folder


def old_pyflyte_run(server, code: Path, workflow: str, *inputs: str) -> str:
    pyflyte = str(Path(OLD_PYTHON).parent / "pyflyte")
    proc = subprocess.run([pyflyte, "--config", str(server.config_path), "run", "--remote", "--project", P,
                           "--domain", D, "oldest_flows.py", workflow, *inputs], cwd=code, env=server.client_env(),
                          capture_output=True, text=True, timeout=300)
    match = EXECUTION_URL.search(proc.stdout + proc.stderr)
    assert proc.returncode == 0 and match, f"old pyflyte run failed:\n{proc.stdout}\n{proc.stderr}"
    return match.group(3)


def _done(server, name: str):
    remote = remote_for(server)
    return remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=240),
                       poll_interval=timedelta(seconds=0.5), sync_nodes=True)


def test_the_oldest_flytekit_registers_runs_and_reads_back(server, code, old):
    names = {
        "hello": old_pyflyte_run(server, code, "old_hello_wf", "--name", old),
        "diamond": old_pyflyte_run(server, code, "old_diamond_wf", "--x", "2"),
        "map": old_pyflyte_run(server, code, "old_map_wf", "--xs", "[1, 2, 3]"),
        "dynamic": old_pyflyte_run(server, code, "old_dynamic_wf", "--n", "4"),
    }
    expected = {"hello": f"hello {old}", "diamond": 13, "map": 14, "dynamic": 14}
    for what, name in names.items():
        ex = _done(server, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (what, ex.closure.error)
        assert ex.outputs["o0"] == expected[what], what
    # Its zygote stayed single-threaded (some releases load pyarrow's allocator registering their types).
    assert "tasks of this interpreter run cold" not in server.log_path.read_text()


def test_the_oldest_flytekit_runs_cold(tmp_path, code, old):
    """Without warm workers its inner `pyflyte-execute` is a console script: the code's folder is on its path."""
    cold = make_server(tmp_path, yaml.safe_dump({"images": {"default": OLD_PYTHON}, "engine": {"warm_workers": False}}))
    cold.start()
    try:
        ex = _done(cold, old_pyflyte_run(cold, code, "old_hello_wf", "--name", old))
    finally:
        cold.stop()
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.closure.error
    assert ex.outputs["o0"] == f"hello {old}"


def test_the_oldest_flytekit_caches(server, code):
    first = _done(server, old_pyflyte_run(server, code, "old_cached_wf", "--x", "3"))
    second = _done(server, old_pyflyte_run(server, code, "old_cached_wf", "--x", "3"))
    assert first.outputs["o0"] == second.outputs["o0"] == 300
    statuses = [ex.node_executions["n0"].closure.task_node_metadata.cache_status for ex in (first, second)]
    assert statuses == [catalog_pb2.CACHE_POPULATED, catalog_pb2.CACHE_HIT]


def test_the_oldest_flytekit_approves_a_gate(server, code):
    name = old_pyflyte_run(server, code, "old_gate_wf", "--x", "6")
    remote = remote_for(server)

    wait_for(lambda: "review" in {s.id.signal_id for s in remote.list_signals(name)}, "the approval signal", 120)
    approve = ("from flytekit.configuration import Config; from flytekit.remote import FlyteRemote; "
               f"r = FlyteRemote(Config.auto({str(server.config_path)!r}), default_project={P!r}, "
               f"default_domain={D!r}); r.set_signal('review', {name!r}, True)")
    subprocess.run([OLD_PYTHON, "-c", approve], env=server.client_env(), check=True, timeout=120,
                   capture_output=True)
    ex = _done(server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.closure.error
    assert ex.outputs["o0"] == 7
