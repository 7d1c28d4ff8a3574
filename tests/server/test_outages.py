"""A server whose database or blob store goes away: while it is down, requests answer UNAVAILABLE naming it and
GET /healthz 503 saying why; a database restart shorter than `database_retry_seconds` is invisible to clients (a
`pyflyte run --remote` during one succeeds and its execution finishes); once the dependency is back, everything is
as before."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.server.health import full_disk
from flytelite.testing import make_server
from flytelite.testing_pg import PG_ENV, PostgresCluster, create_database
from tests.e2e.flyte_cli import copy_workflows, finished, run_remote, wait_for
from tests.proxy import TcpProxy

pytestmark = pytest.mark.e2e
RETRY_SECONDS = 6


@pytest.fixture(autouse=True)
def _once():
    """The dependencies these tests take away are their own (a PostgreSQL, a proxy to S3): they run once, on
    SQLite (make test), not again on the shared PostgreSQL (make test-postgres), which a server of theirs would
    be given instead of their own."""
    if os.environ.get(PG_ENV):
        pytest.skip("outages of the test's own dependencies run once, on SQLite")


@pytest.fixture
def postgres():
    try:
        cluster = PostgresCluster()
    except RuntimeError as e:
        pytest.skip(str(e))
    cluster.start()
    yield cluster
    cluster.stop()


def _health(server) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{server.url}/healthz", timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_database_outage_is_unavailable_and_unhealthy_and_a_short_restart_is_invisible(postgres, tmp_path):
    url = create_database(postgres.url, "flytelite")
    server = make_server(tmp_path / "server", f"database_url: {json.dumps(url)}\n"
                                              f"database_retry_seconds: {RETRY_SECONDS}\nengine: {{lease_seconds: 3}}\n")
    server.start()
    try:
        admin = admin_pb2_grpc.AdminServiceStub(grpc.insecure_channel(server.endpoint))
        request = common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project="flytesnacks", domain="development"), limit=5)
        admin.ListExecutions(request, timeout=60)

        postgres.pause()
        with pytest.raises(grpc.RpcError) as raised:
            admin.ListExecutions(request, timeout=60)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE, raised.value
        assert "ListExecutions: the database cannot be reached" in raised.value.details()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}/api/v1/executions/flytesnacks/development", timeout=60)
        body = json.loads(refused.value.read())
        assert refused.value.code == 503 and body["code"] == 14, body
        assert "the database cannot be reached" in body["message"]
        status, why = wait_for(lambda: (h := _health(server))[0] == 503 and h, "/healthz to answer 503")
        assert why.startswith("the database cannot be written: the database cannot be reached"), why

        postgres.resume()
        wait_for(lambda: _health(server) == (200, "ok"), "/healthz to answer 200 again")
        admin.ListExecutions(request, timeout=60)

        # A restart shorter than the retry: a request sent while the database is down waits for it.
        postgres.pause()
        threading.Timer(2.0, postgres.resume).start()
        admin.ListExecutions(request, timeout=60)
        # So does every request of a run during one, and its execution finishes.
        folder = copy_workflows(tmp_path / "wf", "hello.py")
        postgres.pause()
        threading.Timer(2.0, postgres.resume).start()
        name = run_remote(server, folder, "hello.py", "hello_wf", "--name", "outage")
        execution = finished(server, name)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        assert execution.outputs["o0"] == "hello outage"
    finally:
        server.stop()
    assert "ListExecutions failed: the database cannot be reached" in server.log_text()


def test_a_blob_store_that_refuses_connections_is_unavailable_and_unhealthy_until_it_is_back(s3, tmp_path):
    proxy = TcpProxy(s3.port)
    proxy.accept()
    config = s3.server_config("outage").replace(s3.endpoint, f"http://localhost:{proxy.port}")
    server = make_server(tmp_path / "server", config + "engine: {lease_seconds: 3}\n")
    with open(server.config_path, "a") as f:
        f.write(s3.client_config())
    server.start()
    try:
        folder = copy_workflows(tmp_path / "wf", "hello.py")
        name = run_remote(server, folder, "hello.py", "hello_wf", "--name", "s3")
        assert finished(server, name).outputs["o0"] == "hello s3"
        admin = admin_pb2_grpc.AdminServiceStub(grpc.insecure_channel(server.endpoint))
        data = execution_pb2.WorkflowExecutionGetDataRequest(id=identifier_pb2.WorkflowExecutionIdentifier(
            project="flytesnacks", domain="development", name=name))

        proxy.refuse()
        with pytest.raises(grpc.RpcError) as raised:
            admin.GetExecutionData(data, timeout=120)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE, raised.value
        assert "GetExecutionData: the blob store cannot be reached" in raised.value.details()
        status, why = wait_for(lambda: (h := _health(server))[0] == 503 and h, "/healthz to answer 503")
        assert why.startswith("the blob store cannot be reached: "), why
        metrics = urllib.request.urlopen(f"{server.url}/metrics", timeout=30).read().decode()
        assert 'flytelite:health:dependency_failures{dependency="blob_store"}' in metrics
        assert "flytelite:health:healthy 0" in metrics

        proxy.accept()
        wait_for(lambda: _health(server) == (200, "ok"), "/healthz to answer 200 again", timeout=180)
        assert admin.GetExecutionData(data, timeout=120).full_outputs.literals["o0"].scalar.primitive.string_value \
            == "hello s3"
    finally:
        server.stop()
        proxy.refuse()


def _fill(folder: Path) -> Path:
    """A file that takes every byte left on the folder's disk."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * (1 << 20))
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
    return filler


def test_a_full_disk_is_named_to_clients_and_by_healthz_and_the_database_survives(small_disk, tmp_path):
    home = small_disk / "home"
    server = make_server(tmp_path / "server", "engine: {lease_seconds: 3}\n", home=home)
    server.start()
    try:
        folder = copy_workflows(tmp_path / "wf", "hello.py")
        first = finished(server, run_remote(server, folder, "hello.py", "hello_wf", "--name", "before"))
        admin = admin_pb2_grpc.AdminServiceStub(grpc.insecure_channel(server.endpoint))

        def create(name: str) -> execution_pb2.ExecutionCreateRequest:
            literal = literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(
                string_value=name)))
            return execution_pb2.ExecutionCreateRequest(
                project="flytesnacks", domain="development", name=name,
                spec=execution_pb2.ExecutionSpec(launch_plan=first.spec.launch_plan.to_flyte_idl()),
                inputs=literals_pb2.LiteralMap(literals={"name": literal}))

        filler = _fill(small_disk)
        assert full_disk([str(home)]).startswith(f"the disk of {home} is full (")
        with pytest.raises(grpc.RpcError) as raised:
            admin.CreateExecution(create("full"), timeout=60)
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, raised.value
        assert "is full" in raised.value.details() and "free some space" in raised.value.details()
        status, why = wait_for(lambda: (h := _health(server))[0] == 503 and h, "/healthz to answer 503")
        # The heartbeat's write to the database fails first, or the disk is seen to be full.
        assert why.startswith(("the database cannot be written: the database's disk is full",
                               f"the disk of {home}")) and "free some space" in why, why

        filler.unlink()
        wait_for(lambda: _health(server) == (200, "ok"), "/healthz to answer 200 again")
        admin.CreateExecution(create("after"), timeout=60)
        assert finished(server, "after").outputs["o0"] == "hello after"
    finally:
        server.stop()
    with sqlite3.connect(home / "flytelite.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
