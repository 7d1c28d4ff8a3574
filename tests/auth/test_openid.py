"""Signing in through an OpenID Connect provider (auth/openid.py) end to end: a second flytelite is the provider
(a real OAuth2/OIDC server: discovery, PKCE, ID tokens signed with its published keys); flytekit signs in to the
app with Pkce through a headless browser and with the device-code flow, and the provider's groups decide the
roles."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time

import jwt
import pytest
import requests

from flytelite.auth.oauth2 import pkce_challenge
from tests.auth.clients import HERE, sign_in_fields
from tests.auth.openid_servers import RP_CLIENT, RP_SECRET, USERS, running_pair

pytestmark = pytest.mark.e2e
DEVICE_URL = re.compile(r"(http://\S+/oauth2/device\?user_code=[A-Z]{4}-[A-Z]{4})")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    with running_pair(tmp_path_factory.mktemp("openid")) as servers:
        yield servers


def _client_env(app, tmp_path, user: str) -> dict[str, str]:
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\n'{sys.executable}' '{HERE / 'browser.py'}' \"$1\" >>'{tmp_path}/browser.out' "
                       f"2>&1 &\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    return {**app.client_env(), "BROWSER": str(browser), "AUTH_TEST_BROWSER_LOG": str(tmp_path / "browser.log"),
            "AUTH_TEST_USER": user, "AUTH_TEST_PASSWORD": USERS[user], "DISPLAY": "",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")])}


def test_the_provider_is_an_openid_provider(pair):
    """Discovery, and an ID token for its client with the nonce it sent, signed with the key it publishes."""
    provider, app = pair
    doc = requests.get(f"{provider.url}/.well-known/openid-configuration", timeout=30).json()
    assert doc["issuer"] == provider.url and "openid" in doc["scopes_supported"]
    verifier = "v" * 50
    browser = requests.Session()
    form = browser.get(doc["authorization_endpoint"], timeout=30, params={
        "client_id": RP_CLIENT, "response_type": "code", "scope": "openid profile", "nonce": "n-1", "state": "s",
        "redirect_uri": f"{app.url}/oauth2/callback", "code_challenge": pkce_challenge(verifier),
        "code_challenge_method": "S256"})
    signed = browser.post(doc["authorization_endpoint"], timeout=30, allow_redirects=False,
                          data={**sign_in_fields(form.text), "username": "alice", "password": USERS["alice"]})
    code = re.search(r"code=([^&]+)", signed.headers["location"]).group(1)
    answer = requests.post(doc["token_endpoint"], auth=(RP_CLIENT, RP_SECRET), timeout=30, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": f"{app.url}/oauth2/callback",
        "code_verifier": verifier}).json()
    key = jwt.PyJWKClient(doc["jwks_uri"]).get_signing_key_from_jwt(answer["id_token"])
    claims = jwt.decode(answer["id_token"], key.key, algorithms=["RS256"], audience=RP_CLIENT, issuer=provider.url)
    assert (claims["sub"], claims["nonce"], claims["groups"]) == ("alice", "n-1", ["ml-team"])
    info = requests.get(doc["userinfo_endpoint"], headers={"Authorization": f"Bearer {answer['access_token']}"},
                        timeout=30).json()
    assert (info["sub"], info["groups"]) == ("alice", ["ml-team"])
    # Its tokens are for signing people in, not for the provider's own API (no 'all' scope).
    assert requests.get(f"{provider.url}/api/v1/projects", timeout=30,
                        headers={"Authorization": f"Bearer {answer['access_token']}"}).status_code == 401


def test_flytekit_pkce_signs_in_through_the_provider_and_its_groups_give_roles(pair, tmp_path):
    provider, app = pair
    config = tmp_path / "flytekit.yaml"
    config.write_text(app.admin_config("  authType: Pkce\n"))
    proc = subprocess.run([sys.executable, str(HERE / "projects_client.py"), str(config)],
                          env=_client_env(app, tmp_path, "alice"), capture_output=True, text=True, timeout=240)
    browser_out = (tmp_path / "browser.out").read_text() if (tmp_path / "browser.out").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\nbrowser: {browser_out}"
    # alice's group ml-team is a viewer of flytesnacks (the app's roles): her token carries the provider's groups.
    assert "projects: ['flytesnacks']" in proc.stdout
    assert "issued an access token to alice (client flytectl) by the authorization_code grant" in app.log_text()
    assert f"to alice (client {RP_CLIENT}) by the authorization_code grant" in provider.log_text()
    # The browser went to the app, on to the provider's sign-in, and back.
    assert (tmp_path / "browser.log").read_text().startswith(f"{app.url}/oauth2/authorize?")


def test_flytekit_device_flow_for_a_headless_client(pair, tmp_path):
    """flytekit prints a URL with a user code; a person opens it elsewhere, signs in at the provider and
    approves; flytekit, polling, gets its token. bob is in no group: he sees no project."""
    provider, app = pair
    config = tmp_path / "flytekit.yaml"
    config.write_text(app.admin_config("  authType: DeviceFlow\n"))
    client = subprocess.Popen([sys.executable, str(HERE / "projects_client.py"), str(config)],
                              env=_client_env(app, tmp_path, "bob"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while not (found := DEVICE_URL.search(re.sub(r"\x1b\[[0-9;]*m", "", "".join(lines)))):
            assert time.monotonic() < deadline and client.poll() is None, "".join(lines)
            lines.append(client.stdout.readline())
        person = requests.Session()
        form = person.get(found.group(1), timeout=30)  # sent on to the provider's sign-in
        assert form.url.startswith(f"{provider.url}/oauth2/authorize?"), form.url
        confirm = person.post(form.url.split("?")[0], timeout=30,
                              data={**sign_in_fields(form.text), "username": "bob", "password": USERS["bob"]})
        assert confirm.url.startswith(f"{app.url}/oauth2/device?") and "asks to act as <b>bob</b>" in confirm.text
        user_code = found.group(1).rsplit("=", 1)[1]
        done = person.post(f"{app.url}/oauth2/device", data={"user_code": user_code, "decision": "approve"},
                           timeout=30)
        assert "signed in" in done.text
        out, _ = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, "".join(lines) + out
    assert "projects: []" in out
    assert f"issued an access token to bob (client flytectl) by the {'urn:ietf:params:oauth:grant-type:device_code'}" \
        in app.log_text()
    # The code was used: it names nothing now.
    assert person.get(found.group(1), timeout=30).status_code == 404
