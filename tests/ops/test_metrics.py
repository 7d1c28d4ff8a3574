"""Prometheus metrics: a real Prometheus (Debian's `prometheus`) scrapes a running server's /metrics while a
workflow runs, and its query API returns FlyteAdmin's, FlytePropeller's and flytelite's series; every query of
the shipped Grafana dashboard is one Prometheus accepts."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import free_port, make_server
from tests.e2e.flyte_cli import copy_workflows, finished, remote_for, run_remote, wait_for

PROMETHEUS = shutil.which("prometheus")
DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "flytelite.json"
pytestmark = pytest.mark.e2e


class Prometheus:
    def __init__(self, url: str):
        self.url = url

    def query(self, expr: str) -> dict:
        """The query API's whole answer (status, data or error)."""
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        try:
            with urllib.request.urlopen(address, timeout=30) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:  # a bad query is 400 with the error in the body
            return json.load(e)

    def value(self, expr: str) -> float | None:
        """The query's one value, None while it has none."""
        result = self.query(expr)["data"]["result"]
        return float(result[0]["value"][1]) if result else None


@pytest.fixture(scope="module")
def prometheus(server, tmp_path_factory):
    if not PROMETHEUS:
        pytest.skip("Prometheus is not installed (Debian's `prometheus` package; .ci/run installs it)")
    folder = tmp_path_factory.mktemp("prometheus")
    config = folder / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "flytelite", "static_configs": [{"targets": [f"127.0.0.1:{server.port}"]}]}],
    }))
    port = free_port()
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(folder / "prometheus.log", "wb"))
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {(folder / 'prometheus.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        wait_for(ready, "Prometheus to be ready", 120)
        yield Prometheus(url)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_prometheus_scrapes_the_servers_metrics_while_a_workflow_runs(server, prometheus, tmp_path):
    code = copy_workflows(tmp_path / "wf", "hello.py")
    name = run_remote(server, code, "hello.py", "hello_wf", "--name", "metrics")
    execution = finished(server, name)
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error

    expected = [
        "flyte:admin:admin:create_execution:success",
        "flyte:admin:admin:create_execution:codes:OK",
        "flyte:admin:admin:create_execution:duration_ms_count",
        "flyte:admin:admin:execution_manager:executions_created",
        "flyte:admin:admin:execution_manager:acceptance_delay_count",
        "flyte:propeller:all:round:success_count",
        "flyte:propeller:all:round:round_total_ms_count",
        "flyte:propeller:all:round:streak_length",
        "flytelite:events:apply_ms_count",
        "flytelite:events:recorded",
        "flytelite:database:statement_ms_count",
        "flytelite:blobs:read_ms_count",
        "flytelite:blobs:write_ms_count",
    ]
    for series in expected:
        wait_for(lambda s=series: (prometheus.value(s) or 0) >= 1, f"Prometheus to have {series} >= 1", 120)
    # Gauges read at scrape time.
    assert prometheus.value("flytelite:task_slots:size") >= 4
    for series in ("flyte:propeller:all:free_workers_count", "flyte:propeller:all:main_depth",
                   "flyte:admin:admin:execution_manager:active_executions", "flytelite:replicas:live_engines",
                   "flytelite:task_slots:in_use", "flytelite:leases:held", "flytelite:warm:forks",
                   "flytelite:warm:reused"):
        assert prometheus.value(series) is not None, series
    # A refused call counts as an error with its code.
    with pytest.raises(Exception, match="NOT_FOUND|not found|does not exist"):
        remote_for(server).fetch_execution(name="no-such-execution")
    wait_for(lambda: (prometheus.value("flyte:admin:admin:get_execution:codes:NOT_FOUND") or 0) >= 1,
             "the NOT_FOUND of GetExecution to be counted", 120)
    assert prometheus.value("flyte:admin:admin:get_execution:errors") >= 1


def test_every_dashboard_query_is_one_prometheus_accepts(prometheus):
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(queries) >= 10
    answers = {expr: prometheus.query(expr) for expr in queries}
    refused = {expr: answer.get("error") for expr, answer in answers.items() if answer["status"] != "success"}
    assert refused == {}
    # The check can fail: Prometheus refuses a query that does not parse.
    assert prometheus.query("sum(rate(flyte:propeller:all:round:success_count[5m])")["status"] == "error"


def scrape(url: str) -> dict[str, float]:
    """The unlabelled samples of a /metrics page, by name."""
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        lines = resp.read().decode().splitlines()
    return {name: float(value) for name, _, value in (line.partition(" ") for line in lines)
            if name and not name.startswith("#") and "{" not in name}


def test_an_engine_only_replica_serves_its_metrics_and_health_on_a_port_of_its_own(tmp_path):
    home, port = tmp_path / "home", free_port()
    api = make_server(tmp_path / "api", "", home=home)
    api.role = "api"
    engine = make_server(tmp_path / "engine", yaml.safe_dump({"metrics_port": port}), home=home)
    engine.role = "engine"
    api.start()
    try:
        engine.start()
        try:
            name = run_remote(api, copy_workflows(tmp_path / "wf", "hello.py"), "hello.py", "hello_wf")
            done = finished(api, name)
            assert done.closure.phase == WorkflowExecutionPhase.SUCCEEDED, done.error
            # Each process counts what it did: the engine its rounds, the API its calls.
            on_engine = scrape(f"http://127.0.0.1:{port}/metrics")
            assert on_engine["flyte:propeller:all:round:success_count"] >= 1
            assert on_engine["flytelite:events:recorded"] >= 1
            assert "flyte:admin:admin:create_execution:success" not in on_engine
            # A REST call counts as the RPC it calls (FlyteAdmin's gateway calls it over gRPC).
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(f"{api.url}/api/v1/executions/flytesnacks/development/no-such", timeout=60)
            on_api = scrape(f"{api.url}/metrics")
            assert on_api["flyte:admin:admin:get_execution:codes:NOT_FOUND"] == 1
            assert on_api["flyte:admin:admin:create_execution:success"] == 1
            assert "flyte:propeller:all:round:success_count" not in on_api
            # Its probes' endpoint, which a Deployment of engine replicas checks.
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=60) as resp:
                assert resp.read() == b"ok"
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=60)
        finally:
            engine.stop()
    finally:
        api.stop()
