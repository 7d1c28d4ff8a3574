"""Flyte 2 with authentication on (over TLS, as the flyte SDK signs in only there): the SDK signs in as a client,
its run's tasks call the API as the run's creator, the roles of Flyte 1 decide who may do what, and the audit
trail records Flyte 2's calls that change something, refused ones too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from flytelite.auth.secrets import hash_secret
from flytelite.testing import make_server
from tests.auth.clients import ca_signed_cert
from tests.flyte2.conftest import NO_SDK, PYTHON, SUCCEEDED, drive

pytestmark = NO_SDK

LAUNCHER, VIEWER, SECRET = "launcher-bot", "viewer-bot", "s3cret/for+bots"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flyte2-auth")
    ca, cert, key = ca_signed_cert(folder / "certs")
    server = make_server(folder / "srv", f"""images: {{default: {json.dumps(PYTHON)}}}
tls_ca_file: {json.dumps(str(ca))}
auth:
  access_token_seconds: 3600
  clients:
    {LAUNCHER}: {{secret_hash: "{hash_secret(SECRET)}"}}
    {VIEWER}: {{secret_hash: "{hash_secret(SECRET)}"}}
  roles:
    - role: launcher
      clients: [{LAUNCHER}]
      projects: [flytesnacks]
    - role: viewer
      clients: [{VIEWER}]
      projects: [flytesnacks]
""", tls=(cert, key))
    server.ca_file = str(ca)  # what clients trust
    server.start()
    yield server, ca
    server.stop()


def _as(client: str, ca) -> dict:
    return {"insecure": False, "ca_cert_file_path": str(ca), "auth_type": "ClientSecret", "client_id": client,
            "client_credentials_secret": SECRET}


def _trusting(ca) -> dict[str, str]:
    """The flyte SDK (2.12.1) asks for its token trusting only SSL_CERT_FILE's authorities, not the CA file it is
    given (its own connections trust that one)."""
    return {"SSL_CERT_FILE": str(ca)}


def _call(server, cert, rpc: str, body: dict, token: str = "") -> requests.Response:
    """A unary connect call in JSON, as any HTTP client makes it."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return requests.post(f"{server.url}/{rpc}", json=body, headers=headers, verify=str(cert), timeout=30)


def _audit(server) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "flytelite.cli", "audit", "--home", str(server.home), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_a_signed_in_runs_tasks_call_the_api_as_its_creator(secured):
    server, cert = secured
    remote = drive(server, "gather_squares", {"n": 3}, options=_as(LAUNCHER, cert), env=_trusting(cert))
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["[0, 1, 4]"], remote
    created = [e for e in _audit(server) if e["action"] == "CreateRun" and e["resource"] == remote["name"]]
    assert [(e["identity"], e["outcome"], e["project"]) for e in created] == [(LAUNCHER, "OK", "flytesnacks")]


def test_roles_decide_who_may_run_and_refusals_are_audited(secured):
    server, cert = secured
    refused = drive(server, "square", {"x": 2}, options=_as(VIEWER, cert), env=_trusting(cert),
                    expect_failure=True)["output"]
    assert f"client {VIEWER} lacks the launch permission in project flytesnacks" in refused
    token = requests.post(f"{server.url}/oauth2/token", data={"grant_type": "client_credentials"},
                          auth=(VIEWER, SECRET), verify=str(cert), timeout=30).json()["access_token"]
    run_id = {"project": "flytesnacks", "domain": "development", "name": "refused"}
    created = _call(server, cert, "flyteidl2.workflow.RunService/CreateRun",
                    {"runId": run_id, "taskSpec": {"taskTemplate": {"type": "python"}}}, token)
    assert created.status_code == 403 and created.json()["code"] == "permission_denied", created.text
    denied = [e for e in _audit(server) if e["action"] == "CreateRun" and e["identity"] == VIEWER]
    assert [(e["outcome"], e["resource"]) for e in denied] == [("PERMISSION_DENIED", "refused")]
    listed = _call(server, cert, "flyteidl2.workflow.RunService/ListRuns",
                   {"projectId": {"name": "flytesnacks", "domain": "development"}}, token)
    assert listed.status_code == 200, listed.text  # a viewer views
    other = _call(server, cert, "flyteidl2.workflow.RunService/ListRuns",
                  {"projectId": {"name": "elsewhere", "domain": "development"}}, token)
    assert other.status_code == 403 and other.json()["code"] == "permission_denied", other.text


def test_every_call_but_the_auth_metadata_needs_a_token(secured):
    server, cert = secured
    anonymous = _call(server, cert, "flyteidl2.workflow.RunService/ListRuns",
                      {"projectId": {"name": "flytesnacks", "domain": "development"}})
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthenticated", anonymous.text
    assert "ListRuns needs a bearer token" in anonymous.json()["message"]
    expired = _call(server, cert, "flyteidl2.workflow.RunService/ListRuns", {}, token="not-a-token")
    assert expired.status_code == 401, expired.text
    metadata = _call(server, cert, "flyteidl2.auth.AuthMetadataService/GetOAuth2Metadata", {})
    assert metadata.status_code == 200 and metadata.json()["tokenEndpoint"].endswith("/oauth2/token"), metadata.text
