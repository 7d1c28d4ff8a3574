"""Warm workers stay on in a task environment with the compute plugins installed: the zygote that imports
flytekit (and with it the plugins, numpy and its OpenBLAS) stays fork-safe, a forked task gets the BLAS
threads a fresh process would, and a worker takes the next attempt (flytekit's first conversion registers the
transformers of pandas and numpy, which the plugins import: in the zygote, not in each worker)."""

from __future__ import annotations

import pytest

from flytelite.testing import make_server
from tests.compute.conftest import NO_ENGINES, compute_config, finished, run, succeeded

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_a_task_runs_warm_with_the_compute_plugins_installed(tmp_path):
    (tmp_path / "server").mkdir()
    server = make_server(tmp_path / "server", compute_config(engine={"warm_workers": True}))
    server.start()
    try:
        first = finished(server, run(server, tmp_path, "warm_wf.py", "warm_wf"))
        second = finished(server, run(server, tmp_path, "warm_wf.py", "warm_wf"))
        chain = finished(server, run(server, tmp_path, "warm_wf.py", "pid_chain"))
        log = server.log_text()
    finally:
        server.stop()
    for execution in (first, second):
        succeeded(execution)
    answer = second.outputs["o0"]
    cpus = answer.rsplit("cpus=", 1)[1]
    assert answer == f"zygote numpy=True blas={cpus} cpus={cpus}", answer
    assert "forking it is unsafe" not in log
    succeeded(chain)
    pids = chain.outputs["o0"]
    assert len(set(pids)) < len(pids), pids  # workers took later attempts (a new worker per attempt otherwise)
