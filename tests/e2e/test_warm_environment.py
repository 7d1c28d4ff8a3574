"""Warm workers follow their task environment: a package installed while the server runs is importable by
the next task, without a restart (issue 12, item 9)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.testing import make_server
from tests.e2e.flyte_cli import EXECUTION_URL, copy_workflows, pyflyte
from tests.propeller.task_envs import editable_wheel, fake_joblib_wheel, make_task_env, pip_install

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
FILE = "env_follow.py"
IMAGE = "localhost/flytelite-envtest:1"


def _finish(server, name: str):
    remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                         default_domain="development")
    return remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))


def test_a_package_installed_while_the_server_runs_is_importable_by_the_next_warm_task(tmp_path):
    env = make_task_env(tmp_path / "env", without=("joblib",))
    folder = tmp_path / "server"
    folder.mkdir()
    server = make_server(folder, config=f"images:\n  {IMAGE}: {env.python}\nengine:\n  warm_workers: true\n")
    server.start()
    try:
        code = copy_workflows(tmp_path / "code", FILE)

        def run(entity: str):
            proc = pyflyte(server, "run", "--remote", "--project", "flytesnacks", "--domain", "development",
                           "--image", IMAGE, FILE, entity, cwd=code)
            match = EXECUTION_URL.search(proc.stdout + proc.stderr)
            assert match, f"no execution URL in pyflyte output:\n{proc.stdout}\n{proc.stderr}"
            return _finish(server, match.group(3))

        before = {entity: run(entity) for entity in ("ef_editable_wf", "ef_lazy_wf")}
        for execution in before.values():
            assert execution.closure.phase == WorkflowExecutionPhase.FAILED
        assert "No module named 'ef_probe'" in before["ef_editable_wf"].error.message
        assert "Module joblib is not yet installed" in before["ef_lazy_wf"].error.message
        server_pid = server.proc.pid

        pip_install(env, editable_wheel(tmp_path / "ef_probe", "ef_probe", "probe v1"), fake_joblib_wheel(tmp_path))

        after = {entity: run(entity) for entity in ("ef_editable_wf", "ef_lazy_wf")}
        for entity, execution in after.items():
            assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (entity, execution.error)
        assert after["ef_editable_wf"].outputs["o0"] == "probe v1 via zygote"
        assert after["ef_lazy_wf"].outputs["o0"] == "ef-1-fake-joblib-hash via zygote"
        assert server.proc.pid == server_pid and server.proc.poll() is None, "the server must not have restarted"
        assert "changed since the zygote for" in server.log_text()
    finally:
        server.stop()
