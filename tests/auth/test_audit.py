"""The audit trail (admin/audit.py) of a real server with authentication on: registering and running a workflow
with pyflyte, terminating it over REST, a call refused for want of a token; listed by `flytelite audit`, on the
console's audit page, and removed by retention."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import grpc
import pytest
import requests
from flyteidl.admin import execution_pb2
from flyteidl.service import admin_pb2_grpc

from flytelite.config import Config
from flytelite.context import Context
from flytelite.retention import collect
from flytelite.storage import BlobStore
from flytelite.store.db import Database
from tests.auth.clients import CLIENT_ID, CLIENT_SECRET, auth_server, client_secret_config
from tests.e2e.flyte_cli import run_remote, wait_for

pytestmark = pytest.mark.e2e
SLEEPY = """import time

from flytekit import task, workflow


@task
def nap() -> None:
    time.sleep(300)


@workflow
def sleepy_wf() -> None:
    nap()
"""


def audit_lines(server, *args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "flytelite.cli", "audit", "--home", str(server.home), "--json",
                          *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_who_changed_what_from_where_and_how_it_ended(tmp_path):
    server = auth_server(tmp_path / "srv", access_token_seconds=60)
    server.start()
    try:
        server.config_path = client_secret_config(server, tmp_path / "flytekit.yaml")
        code = tmp_path / "wf"
        code.mkdir()
        (code / "sleepy.py").write_text(SLEEPY)
        name = run_remote(server, code, "sleepy.py", "sleepy_wf")
        token = requests.post(f"{server.url}/oauth2/token", data={"grant_type": "client_credentials"},
                              auth=(CLIENT_ID, CLIENT_SECRET), timeout=30).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        # Terminated over REST, as the console's button does.
        resp = requests.delete(f"{server.url}/api/v1/executions/flytesnacks/development/{name}",
                               json={"cause": "audited"}, headers=headers, timeout=30)
        assert resp.status_code == 200, resp.text
        # Refused: no token.
        with grpc.insecure_channel(server.endpoint) as channel, pytest.raises(grpc.RpcError) as err:
            admin_pb2_grpc.AdminServiceStub(channel).CreateExecution(
                execution_pb2.ExecutionCreateRequest(project="flytesnacks", domain="development", name="sneaky"),
                timeout=30)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        page = requests.get(f"{server.url}/console/audit", headers=headers, timeout=30)
    finally:
        server.stop()

    events = audit_lines(server)
    actions = [(e["action"], e["outcome"]) for e in events]
    # Newest first: the refused create, the REST terminate, then pyflyte's create and its registration.
    assert actions[0] == ("CreateExecution", "UNAUTHENTICATED")
    assert actions[1] == ("TerminateExecution", "OK")
    assert ("CreateExecution", "OK") in actions[2:]
    assert {"CreateTask", "CreateWorkflow", "CreateLaunchPlan"} <= {a for a, _ in actions[2:]}
    refused, terminated = events[0], events[1]
    assert (refused["identity"], refused["address"], refused["resource"]) == ("", "127.0.0.1", "sneaky")
    assert "bearer token" in refused["message"]
    assert (terminated["identity"], terminated["client_id"]) == (CLIENT_ID, CLIENT_ID)
    assert (terminated["project"], terminated["domain"], terminated["resource"]) == ("flytesnacks", "development", name)
    created = next(e for e in events if e["action"] == "CreateExecution" and e["outcome"] == "OK")
    assert created["identity"] == CLIENT_ID and created["address"] == "127.0.0.1" and created["resource"]
    assert not [e for e in events if e["action"].startswith(("Get", "List"))]  # reads are not audited
    assert [e["action"] for e in audit_lines(server, "--project", "nowhere")] == []
    # The console's page lists them too.
    assert page.status_code == 200
    assert page.text.count("data-audit='TerminateExecution'") == 1 and "UNAUTHENTICATED" in page.text

    # Retention removes events past gc.audit_older_than.
    config = Config.load(None, home=server.home)
    ctx = Context(config=config, db=Database(config.db_url), blobs=BlobStore(config.blob_root))
    try:
        assert collect(ctx, timedelta(days=365)).audit_events == 0
        config.gc.audit_older_than = "1s"
        wait_for(lambda: collect(ctx, timedelta(days=365)).audit_events == len(events), "the events to age", 60)
        assert audit_lines(server) == []
    finally:
        ctx.db.dispose()
