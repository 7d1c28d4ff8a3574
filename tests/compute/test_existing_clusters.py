"""Tasks join the clusters the configuration names instead of starting their own: a real Spark standalone
master and worker, a real Ray head and a real Dask scheduler and worker, started here, each serving two
executions at once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from flytelite.testing import make_server
from tests.compute.conftest import NO_ENGINES, PYTHON, compute_config, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

# Long enough for the fixture's own teardown, which stops the clusters.
pytestmark = [pytest.mark.e2e, NO_ENGINES, pytest.mark.timeout(900)]
BIN = Path(PYTHON).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    logs = tmp_path_factory.mktemp("clusters")
    spark, spark_ui, spark_worker_ui, ray_gcs, ray_dashboard, dask = (_port() for _ in range(6))
    # spark-class finds Spark through the `python` first on PATH.
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    commands = {
        "spark-master": [BIN / "spark-class", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", spark, "--webui-port", spark_ui],
        "spark-worker": [BIN / "spark-class", "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{spark}",
                         "--host", "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", spark_worker_ui],
        "ray-head": [BIN / "ray", "start", "--head", "--block", f"--port={ray_gcs}", f"--dashboard-port={ray_dashboard}",
                     "--dashboard-host=127.0.0.1", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                     f"--dashboard-agent-listen-port={_port()}", f"--ray-client-server-port={_port()}",
                     f"--temp-dir=/tmp/ray-test-{ray_gcs}"],
        "dask-scheduler": [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", dask, "--no-dashboard"],
        "dask-worker": [BIN / "dask", "worker", f"tcp://127.0.0.1:{dask}", "--nthreads", "2", "--no-dashboard"],
    }
    procs = []
    for name, argv in commands.items():
        with open(logs / f"{name}.log", "ab") as log:
            procs.append(subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT, env=env,
                                          cwd=logs, start_new_session=True))
    for port in (spark, ray_dashboard, dask):
        wait_for(lambda port=port: _listening(port), f"a cluster to listen on {port}", timeout=120)
    yield {"spark": {"master": f"spark://127.0.0.1:{spark}"}, "ray": {"address": f"http://127.0.0.1:{ray_dashboard}"},
           "dask": {"scheduler_address": f"tcp://127.0.0.1:{dask}"}}, ray_gcs, logs
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_two_executions_at_once_run_on_the_named_clusters(clusters, tmp_path):
    config, ray_gcs, cluster_dir = clusters
    (tmp_path / "server").mkdir()
    server = make_server(tmp_path / "server", compute_config(**config))
    server.start()
    try:
        names = [run(server, tmp_path / str(i), "cluster_wf.py", "cluster_wf") for i in range(2)]
        executions = [finished(server, name) for name in names]
    finally:
        server.stop()
    for execution in executions:
        succeeded(execution)
        spark, ray, dask = (execution.outputs[f"o{i}"] for i in range(3))
        assert spark == f"{config['spark']['master']} 4"
        assert ray.endswith(f":{ray_gcs} 4"), ray
        assert dask == f"{config['dask']['scheduler_address']} 3"
    # The tasks' code was unpacked in their attempts' folders, not where the clusters run.
    assert not list(cluster_dir.glob("*.py")) and not list(cluster_dir.glob("*.tar.gz"))
