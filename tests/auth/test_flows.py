"""Authentication end to end: a real server with an `auth:` block, driven by real flytekit in each of its
flows (ClientSecret, Pkce through a headless browser, ExternalCommand), the console's browser sign-in,
tokens refused (none, forged, expired, of the wrong kind), a task calling the API with injected
credentials, and TLS with a CA file."""

from __future__ import annotations

import os
import socket
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import grpc
import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from flyteidl.admin import project_pb2
from flyteidl.service import admin_pb2_grpc, auth_pb2, auth_pb2_grpc, identity_pb2, identity_pb2_grpc
from flytekit.configuration import Config as FlyteConfig
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.auth.http import ACCESS_COOKIE
from flytelite.testing import free_port
from tests.auth.clients import (
    CLIENT_ID,
    CLIENT_SECRET,
    HERE,
    PASSWORD,
    USER,
    auth_server,
    client_secret_config,
    external_command_config,
    pkce_config,
    self_signed_cert,
    sign_in_fields,
)
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    server = auth_server(tmp_path_factory.mktemp("auth"), redirect_port=free_port())
    server.start()
    yield server
    server.stop()


def _remote(config_path) -> FlyteRemote:
    return FlyteRemote(FlyteConfig.auto(str(config_path)), default_project="flytesnacks", default_domain="development")


def _grants(server, client: str, grant: str) -> int:
    return server.log_text().count(f"(client {client}) by the {grant} grant")


def _list_projects(server, token: str | None):
    with grpc.insecure_channel(server.endpoint) as channel:
        metadata = [("flyte-authorization", f"Bearer {token}")] if token is not None else None
        return admin_pb2_grpc.AdminServiceStub(channel).ListProjects(project_pb2.ProjectListRequest(), timeout=30,
                                                                     metadata=metadata)


def _token(server, **form) -> dict:
    resp = requests.post(f"{server.url}/oauth2/token", data={"grant_type": "client_credentials", **form},
                         auth=(CLIENT_ID, CLIENT_SECRET), timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_requests_without_a_valid_token_are_unauthenticated(srv):
    good = _token(srv)["access_token"]
    assert _list_projects(srv, good).projects
    claims = jwt.decode(good, options={"verify_signature": False})
    own_key = (srv.home / "auth" / "signing-key.pem").read_bytes()
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = jwt.get_unverified_header(good)["kid"]
    refused = {
        "no token": None,
        "not a JWT": "garbage",
        "forged (another key)": jwt.encode(claims, other_key, algorithm="RS256", headers={"kid": kid}),
        "expired": jwt.encode({**claims, "exp": int(time.time()) - 60}, own_key, algorithm="RS256"),
        "a refresh token": jwt.encode({**claims, "token_use": "refresh"}, own_key, algorithm="RS256"),
        "unsigned": jwt.encode(claims, None, algorithm="none"),
        "without scope all": jwt.encode({**claims, "scp": "offline"}, own_key, algorithm="RS256"),
    }
    for what, token in refused.items():
        with pytest.raises(grpc.RpcError) as err:
            _list_projects(srv, token)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, what
        assert err.value.details(), what
    # Discovery stays open, over gRPC and HTTP, as FlyteAdmin's does; so does health.
    with grpc.insecure_channel(srv.endpoint) as channel:
        meta = auth_pb2_grpc.AuthMetadataServiceStub(channel).GetOAuth2Metadata(auth_pb2.OAuth2MetadataRequest())
        client = auth_pb2_grpc.AuthMetadataServiceStub(channel).GetPublicClientConfig(
            auth_pb2.PublicClientAuthConfigRequest())
    assert meta.token_endpoint == f"{srv.url}/oauth2/token" and "S256" in meta.code_challenge_methods_supported
    assert client.client_id == "flytectl" and client.authorization_metadata_key == "flyte-authorization"
    assert requests.get(f"{srv.url}/.well-known/oauth-authorization-server", timeout=30).json()["issuer"] == srv.url
    assert requests.get(f"{srv.url}/config/v1/flyte_client", timeout=30).json()["client_id"] == "flytectl"
    assert requests.get(f"{srv.url}/oauth2/jwks", timeout=30).json()["keys"][0]["kid"] == kid
    assert requests.get(f"{srv.url}/healthz", timeout=30).status_code == 200
    # Every other HTTP route: 401 for API clients, a sign-in for browsers; a bearer token opens them.
    rest = requests.get(f"{srv.url}/api/v1/projects", timeout=30)
    assert rest.status_code == 401 and rest.json()["code"] == 16
    assert requests.get(f"{srv.url}/api/v1/projects", headers={"Authorization": f"Bearer {refused['expired']}"},
                        timeout=30).status_code == 401
    assert requests.get(f"{srv.url}/api/v1/projects", headers={"Authorization": f"Bearer {good}"},
                        timeout=30).status_code == 200
    page = requests.get(f"{srv.url}/console/projects/flytesnacks/executions", allow_redirects=False, timeout=30)
    assert page.status_code == 302 and page.headers["location"].startswith("/login?redirect_url=")
    # The token endpoint refuses a wrong secret and a public client asking for client credentials.
    bad = requests.post(f"{srv.url}/oauth2/token", data={"grant_type": "client_credentials"},
                        auth=(CLIENT_ID, "wrong"), timeout=30)
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    public = requests.post(f"{srv.url}/oauth2/token", data={"grant_type": "client_credentials",
                                                            "client_id": "flytectl"}, timeout=30)
    assert public.status_code == 400 and public.json()["error"] == "unauthorized_client"


def test_user_info_names_the_tokens_subject_over_grpc_and_rest(srv):
    token = _token(srv)["access_token"]
    with grpc.insecure_channel(srv.endpoint) as channel:
        stub = identity_pb2_grpc.IdentityServiceStub(channel)
        info = stub.UserInfo(identity_pb2.UserInfoRequest(), timeout=30,
                             metadata=[("flyte-authorization", f"Bearer {token}")])
        with pytest.raises(grpc.RpcError) as err:
            stub.UserInfo(identity_pb2.UserInfoRequest(), timeout=30)
    assert info.subject == CLIENT_ID and info.additional_claims["client_id"] == CLIENT_ID
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    me = requests.get(f"{srv.url}/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert me.status_code == 200 and me.json()["subject"] == CLIENT_ID, me.text
    assert requests.get(f"{srv.url}/me", timeout=30).status_code == 401
    # The console's sign-in cookie, which every other route accepts, names the same caller.
    by_cookie = requests.get(f"{srv.url}/me", cookies={ACCESS_COOKIE: token}, timeout=30)
    assert by_cookie.status_code == 200 and by_cookie.json()["subject"] == CLIENT_ID, by_cookie.text


def test_client_secret_flow_runs_a_workflow_and_gets_a_new_token_after_expiry(srv, tmp_path):
    config = client_secret_config(srv, tmp_path / "flytekit.yaml")
    srv.config_path = config
    folder = copy_workflows(tmp_path / "wf", "hello.py")
    name = run_remote(srv, folder, "hello.py", "hello_wf", "--name", "auth")
    remote = _remote(config)
    ex = remote.wait(remote.fetch_execution(name=name), timeout=180)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == "hello auth"
    # Access tokens live 3 s here: flytekit gets UNAUTHENTICATED once its token expired, fetches a new one
    # with its secret and repeats the call; the caller never sees the refusal.
    before = _grants(srv, CLIENT_ID, "client_credentials")
    deadline = time.monotonic() + 120
    while _grants(srv, CLIENT_ID, "client_credentials") <= before:
        assert time.monotonic() < deadline, "flytekit never fetched a new token"
        assert remote.client.list_projects().projects
        time.sleep(0.2)


def test_pkce_flow_signs_in_through_the_browser_and_refreshes(srv, tmp_path):
    browser_log = tmp_path / "browser.log"
    browser = tmp_path / "browser.sh"
    # webbrowser waits for $BROWSER to exit, and flytekit answers its callback only after that: run in the
    # background, as a desktop browser does.
    browser.write_text(f"#!/bin/sh\n'{sys.executable}' '{HERE / 'browser.py'}' \"$1\" >>'{tmp_path}/browser.out' "
                       f"2>&1 &\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    env = {**srv.client_env(), "BROWSER": str(browser), "AUTH_TEST_BROWSER_LOG": str(browser_log),
           "AUTH_TEST_USER": USER, "AUTH_TEST_PASSWORD": PASSWORD, "DISPLAY": "",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
           "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(HERE / "pkce_client.py"), str(srv.log_path),
                           str(pkce_config(srv, tmp_path / "flytekit.yaml"))],
                          env=env, capture_output=True, text=True, timeout=240)
    browser_out = (tmp_path / "browser.out").read_text() if (tmp_path / "browser.out").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\nbrowser: {browser_out}"
    assert "refreshed" in proc.stdout
    # One sign-in in the browser; after that the refresh token kept flytekit signed in.
    assert len(browser_log.read_text().splitlines()) == 1
    assert _grants(srv, "flytectl", "authorization_code") == 1
    assert _grants(srv, "flytectl", "refresh_token") >= 1
    assert f"to {USER} (client flytectl)" in srv.log_text()


def test_external_command_flow(srv, tmp_path):
    remote = _remote(external_command_config(srv, tmp_path / "flytekit.yaml"))
    assert [p.id for p in remote.client.list_projects().projects]


def test_console_signs_in_through_the_browser_and_keeps_a_cookie(srv):
    browser = requests.Session()
    form = browser.get(f"{srv.url}/console/projects/flytesnacks/executions?domain=development", timeout=30)
    assert form.status_code == 200 and "Sign in to flytelite" in form.text
    assert form.url.startswith(f"{srv.url}/oauth2/authorize?")
    fields = sign_in_fields(form.text)
    wrong = browser.post(f"{srv.url}/oauth2/authorize", data={**fields, "username": USER, "password": "nope"},
                         timeout=30)
    assert wrong.status_code == 401 and "wrong password" in wrong.text
    page = browser.post(f"{srv.url}/oauth2/authorize", data={**fields, "username": USER, "password": PASSWORD},
                        timeout=30)
    assert page.status_code == 200, page.text
    assert page.url == f"{srv.url}/console/projects/flytesnacks/executions?domain=development"
    assert "flyte_at" in browser.cookies
    # The cookie opens the REST API too (the console's own calls), and signing out closes it again.
    assert browser.get(f"{srv.url}/api/v1/projects", timeout=30).status_code == 200
    browser.get(f"{srv.url}/logout", timeout=30)
    assert browser.get(f"{srv.url}/api/v1/projects", timeout=30).status_code == 401


def test_tls_with_a_ca_file_and_a_task_that_calls_the_api(tmp_path):
    """flytekit with insecure: false and caCertFilePath; an eager workflow's task registers and launches
    executions itself with the credentials flytelite hands it, as the execution's creator."""
    cert, key = self_signed_cert(tmp_path / "certs")
    server = auth_server(tmp_path / "srv", tls=(cert, key))
    server.start()
    try:
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(f"{server.url}/healthz", timeout=30)  # not trusted without the CA file
        assert requests.get(f"{server.url}/healthz", verify=str(cert), timeout=30).status_code == 200
        # A client offering both (the flyte SDK's connect client) gets HTTP/1.1, which the HTTP app serves; a gRPC
        # client offers only h2 (flytekit, below).
        assert _alpn(server.port, cert, ["h2", "http/1.1"]) == "http/1.1"
        assert _alpn(server.port, cert, ["h2"]) == "h2"
        server.config_path = client_secret_config(server, tmp_path / "flytekit.yaml")
        folder = copy_workflows(tmp_path / "wf", "eager_static.py")
        name = run_remote(server, folder, "eager_static.py", "eager_a", "--x", "3")
        remote = _remote(server.config_path)
        ex = remote.wait(remote.fetch_execution(name=name), timeout=240)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == 8
        # The task acted for the execution's creator, through its execution's own client.
        assert f"to {CLIENT_ID} (client flytepropeller/flytesnacks/development/{name}) by the client_credentials" \
            in server.log_text()
    finally:
        server.stop()


def _alpn(port: int, ca: Path, offered: list[str]) -> str | None:
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(offered)
    with socket.create_connection(("localhost", port), timeout=30) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        return tls.selected_alpn_protocol()
