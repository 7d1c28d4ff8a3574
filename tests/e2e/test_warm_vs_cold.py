"""`pyflyte run --remote` against a warm-worker server and a cold one: the same results, end to end."""

from __future__ import annotations

import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
FILE = "warm_vs_cold.py"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """{"warm": server, "cold": server}: the same flytelite, with and without warm workers."""
    made = {}
    for mode in ("warm", "cold"):
        srv = make_server(tmp_path_factory.mktemp(f"server-{mode}"),
                          f"engine:\n  warm_workers: {'true' if mode == 'warm' else 'false'}\n")
        made[mode] = srv
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda s: s.start(), made.values()))
    yield made
    for srv in made.values():
        srv.stop()


def _remote(server) -> FlyteRemote:
    return FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                       default_domain="development")


def _finish(server, name: str):
    remote = _remote(server)
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    remote.sync_execution(execution, sync_nodes=True)
    nodes = {nid: (n.closure.phase, len(n.task_executions), [t.closure.phase for t in n.task_executions])
             for nid, n in execution.node_executions.items()}
    return execution, nodes


def _metric(server, name: str) -> float | None:
    """The value of an unlabelled series on the server's /metrics page (None: not there)."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=60) as resp:
        lines = resp.read().decode().splitlines()
    values = [float(line.split()[1]) for line in lines if line.split(" ", 1)[0] == name]
    return values[0] if values else None


def _run_both(servers, folders, entity: str, *inputs) -> dict:
    """Start the same `pyflyte run --remote` on both servers at once; {mode: (execution, nodes, seconds)}."""
    def one(mode):
        srv = servers[mode]
        args = [a.format(endpoint=srv.endpoint) for a in inputs]
        started = time.monotonic()
        name = run_remote(srv, folders[mode], FILE, entity, *args)
        execution, nodes = _finish(srv, name)
        return mode, (execution, nodes, time.monotonic() - started)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, ("warm", "cold")))


def test_pyflyte_run_remote_gives_the_same_results_warm_and_cold(servers, tmp_path, capsys):
    folders = {mode: copy_workflows(tmp_path / mode, FILE) for mode in servers}
    main = _run_both(servers, folders, "wvc_main", "--endpoint", "{endpoint}")
    failed = _run_both(servers, folders, "wvc_fail_wf")
    for mode in ("warm", "cold"):
        execution = main[mode][0]
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, (mode, execution.error)
    warm, cold = main["warm"][0], main["cold"][0]
    outputs = [warm.outputs[f"o{i}"] for i in range(5)]
    assert outputs == [cold.outputs[f"o{i}"] for i in range(5)]
    # gRPC from inside a forked task works (FlyteRemote sees its own execution RUNNING).
    assert outputs == [5, "WARM", 501, "True:2", "one"]
    assert main["warm"][1] == main["cold"][1]  # every node's phase and its attempts
    flaky = [n for n in main["warm"][1].values() if n[1] == 2]
    assert flaky == [(3, 2, [5, 3])]  # wvc_flaky: FAILED, then SUCCEEDED

    for mode in ("warm", "cold"):
        assert failed[mode][0].closure.phase == WorkflowExecutionPhase.FAILED
    warm_error, cold_error = failed["warm"][0].error, failed["cold"][0].error
    assert "wvc: x=7 is not welcome" in warm_error.message
    # The traceback names the task's file, which lives in the attempt's folder under each server's home.
    warm_message, cold_message = (
        failed[mode][0].error.message.replace(str(servers[mode].home), "<home>").replace(failed[mode][0].id.name, "<x>")
        for mode in ("warm", "cold"))
    assert (warm_error.code, warm_error.kind, warm_message) == (cold_error.code, cold_error.kind, cold_message)
    assert failed["warm"][1] == failed["cold"][1]
    # The warm server counts the attempts its zygote forked; the cold one forks none and has no such series.
    assert _metric(servers["warm"], "flytelite:warm:forks") >= 1
    assert _metric(servers["cold"], "flytelite:warm:forks") is None
    with capsys.disabled():
        print(f"\n[warm vs cold] wvc_main (9 tasks, 1 retry) from `pyflyte run` to done: "
              f"warm {main['warm'][2]:.1f}s, cold {main['cold'][2]:.1f}s")


def test_new_code_of_the_same_module_runs_in_the_same_zygote(servers, tmp_path):
    """The zygote never imports user code: a changed file under the same module name runs as changed."""
    folders = {mode: copy_workflows(tmp_path / mode, FILE) for mode in servers}
    results = []
    for version in ("one", "two"):
        for folder in folders.values():
            path = folder / FILE
            path.write_text(path.read_text().replace('CODE_VERSION = "one"', f'CODE_VERSION = "{version}"'))
        runs = _run_both(servers, folders, "wvc_version_wf")
        results.append({mode: (run[0].outputs["o0"], run[0].outputs["o1"]) for mode, run in runs.items()})
    assert results == [
        {"warm": ("one", "zygote"), "cold": ("one", "fast-execute")},
        {"warm": ("two", "zygote"), "cold": ("two", "fast-execute")},
    ]
