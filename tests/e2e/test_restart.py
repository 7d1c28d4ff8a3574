"""SIGKILL the server while a workflow runs, start it again: the execution finishes, nothing reruns."""

from __future__ import annotations

import signal
import time
from datetime import timedelta

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e


def test_sigkill_and_restart_finishes_without_rerunning(fresh_server, tmp_path):
    server = fresh_server
    remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                         default_domain="development")
    folder = copy_workflows(tmp_path / "wf", "restart.py")
    markers = tmp_path / "markers"
    name = run_remote(server, folder, "restart.py", "restart_wf", "--marker_dir", str(markers), "--seconds", "6")

    deadline = time.monotonic() + 90
    while not any(p.name.startswith("slow-") for p in markers.glob("*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(p.name.startswith("slow-") for p in markers.glob("*")), "the slow task never started"

    server.stop(sig=signal.SIGKILL)
    server.start()

    execution = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=120),
                            poll_interval=timedelta(seconds=0.5))
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == 20
    runs = sorted(p.name.split("-")[0] for p in markers.iterdir())
    # first ran once; slow ran once (its process outlived the server and was waited for); last once.
    assert runs == ["first", "last", "slow"], runs
