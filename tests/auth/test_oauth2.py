"""The authorization server's grants and tokens without a server process: hashes, PKCE, refusals."""

from __future__ import annotations

import datetime
import re

import pytest

from flytelite.auth.device import DeviceGrants
from flytelite.auth.keys import load_or_create
from flytelite.auth.oauth2 import AuthorizationServer, OAuthError, pkce_challenge
from flytelite.auth.secrets import hash_secret, verify_secret
from flytelite.auth.setup import build_auth
from flytelite.auth.task_clients import TaskClients
from flytelite.auth.tokens import ACCESS, REFRESH, TokenIssuer
from flytelite.config import Config
from flytelite.config.auth import AuthConfig
from flytelite.errors import Unauthenticated
from flytelite.store.db import Database

ISSUER = "http://localhost:30080"
REDIRECT = "http://localhost:53593/callback"


class FakeClock:
    def __init__(self):
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def server(tmp_path, clock) -> AuthorizationServer:
    cfg = AuthConfig(enabled=True, access_token_seconds=60, clients={"robot": {"secret_hash": hash_secret("pw")}},
                     users={"alice": hash_secret("wonderland")})
    key = load_or_create(tmp_path / "key.pem", generate=True)
    return AuthorizationServer(cfg, TokenIssuer(key, lambda: ISSUER, clock),
                               TaskClients(cfg.task_client_id, "task-secret"))


def _code(server, verifier="v" * 50, redirect=REDIRECT, client="flytectl") -> str:
    req = server.check_authorize({"client_id": client, "redirect_uri": redirect, "response_type": "code",
                                  "state": "s", "scope": "all offline", "code_challenge": pkce_challenge(verifier),
                                  "code_challenge_method": "S256"})
    url = server.issue_code(req, "alice")
    return url.split("code=")[1].split("&")[0]


def test_secrets_are_stored_hashed_and_checked_in_constant_time():
    stored = hash_secret("s3cret")
    assert "s3cret" not in stored and stored.startswith("pbkdf2_sha256$")
    assert verify_secret("s3cret", stored) and not verify_secret("s3cre", stored)
    assert not verify_secret("s3cret", "s3cret")  # a plain secret in the config never matches
    with pytest.raises(ValueError, match="hash-secret"):
        AuthorizationServer(AuthConfig(enabled=True, clients={"x": {"secret_hash": "plain"}}), None,
                            TaskClients("t", ""))


def test_client_credentials_issue_an_expiring_access_token(server, clock):
    answer = server.token({"grant_type": "client_credentials", "scope": "all"}, ("robot", "pw"))
    assert answer["expires_in"] == 60 and "refresh_token" not in answer
    assert server.tokens.identity(answer["access_token"]).subject == "robot"
    clock.now += 61
    with pytest.raises(Unauthenticated, match="expired"):
        server.tokens.identity(answer["access_token"])
    for basic, error in ((("robot", "nope"), "invalid_client"), (("ghost", "pw"), "invalid_client"),
                         (("task-client", "x"), "invalid_client")):
        with pytest.raises(OAuthError) as exc:
            server.token({"grant_type": "client_credentials"}, basic)
        assert exc.value.error == error
    task = server.token({"grant_type": "client_credentials"}, ("flytepropeller", "task-secret"))
    assert server.tokens.identity(task["access_token"]).client_id == "flytepropeller"


def test_authorization_code_needs_the_pkce_verifier_and_gives_a_refresh_token(server, clock):
    form = {"grant_type": "authorization_code", "client_id": "flytectl", "redirect_uri": REDIRECT}
    with pytest.raises(OAuthError, match="code_verifier"):
        server.token({**form, "code": _code(server), "code_verifier": "w" * 50}, None)
    with pytest.raises(OAuthError, match="redirect_uri"):
        server.token({**form, "code": _code(server, redirect="http://localhost:1234/callback"),
                      "code_verifier": "v" * 50}, None)
    answer = server.token({**form, "code": _code(server), "code_verifier": "v" * 50}, None)
    assert server.tokens.identity(answer["access_token"]).subject == "alice"
    with pytest.raises(Unauthenticated):
        server.tokens.identity(answer["refresh_token"])  # a refresh token is no access token
    clock.now += 120  # the access token expired; the refresh token still works
    again = server.token({"grant_type": "refresh_token", "client_id": "flytectl",
                          "refresh_token": answer["refresh_token"]}, None)
    assert server.tokens.identity(again["access_token"]).subject == "alice"
    with pytest.raises(OAuthError, match="issued to client flytectl"):
        server.token({"grant_type": "refresh_token", "client_id": "robot", "refresh_token": again["refresh_token"]},
                     ("robot", "pw"))
    clock.now += 3600
    with pytest.raises(OAuthError, match="expired"):
        server.token({"grant_type": "refresh_token", "client_id": "flytectl",
                      "refresh_token": again["refresh_token"]}, None)


def test_authorize_checks_client_redirect_and_pkce(server):
    base = {"client_id": "flytectl", "response_type": "code", "code_challenge": "c", "code_challenge_method": "S256"}
    # Loopback redirect URIs match on any port (RFC 8252), nothing else does.
    assert server.check_authorize({**base, "redirect_uri": "http://127.0.0.1:4711/callback"})
    for params, error in (({**base, "redirect_uri": "http://evil.example/callback"}, "invalid_request"),
                          ({**base, "redirect_uri": REDIRECT, "code_challenge_method": "plain"}, "invalid_request"),
                          ({**base, "redirect_uri": REDIRECT, "response_type": "token"}, "unsupported_response_type"),
                          ({**base, "client_id": "nobody", "redirect_uri": REDIRECT}, "invalid_client"),
                          ({**base, "redirect_uri": REDIRECT, "scope": "offline"}, "invalid_scope")):
        with pytest.raises(OAuthError) as exc:
            server.check_authorize(params)
        assert exc.value.error == error, params


def test_sign_in_sessions(server):
    with pytest.raises(Unauthenticated):
        server.sign_in("alice", "wrong")
    session = server.sign_in("alice", "wonderland")
    assert server.session_user(session) == ("alice", ())
    assert server.session_user(server.tokens.sign(REFRESH, "alice", "flytectl", 60)) is None
    assert server.session_user(server.tokens.sign(ACCESS, "alice", "flytectl", 60, scp="all")) is None


def test_auth_is_off_without_an_auth_block(tmp_path):
    off = Config.load(None, home=tmp_path)
    assert not off.auth.enabled and build_auth(off.auth, tmp_path, lambda: ISSUER) is None
    assert not (tmp_path / "auth").exists()
    path = tmp_path / "flytelite.yaml"
    path.write_text("auth:\n  users: {}\n")
    on = Config.load(path, home=tmp_path)
    auth = build_auth(on.auth, tmp_path, lambda: ISSUER)
    assert auth is not None and (tmp_path / "auth" / "signing-key.pem").stat().st_mode & 0o077 == 0
    # A second process on the same home uses the same key (tokens of one are valid at the other).
    other = build_auth(on.auth, tmp_path, lambda: ISSUER)
    token = auth.tokens.sign(ACCESS, "x", "y", 60, scp="all")
    assert other.tokens.identity(token).subject == "x"
    assert other.task_secret == auth.task_secret


class StepClock:
    """The database's clock (datetime), moved by the test."""

    def __init__(self):
        self.at = datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc)

    def now(self) -> datetime.datetime:
        return self.at


def _device_server(server, tmp_path) -> StepClock:
    db = Database(f"sqlite:///{tmp_path / 'device.db'}")
    db.migrate()
    steps = StepClock()
    server.devices = DeviceGrants(db, steps)
    return steps


def test_device_code_grant_waits_for_a_person_then_answers_once(server, tmp_path):
    _device_server(server, tmp_path)
    asked = server.device_authorization({"client_id": "flytectl", "scope": "all offline"}, None)
    assert re.fullmatch(r"[B-Z]{4}-[B-Z]{4}", asked["user_code"]) and asked["interval"] >= 1
    poll = {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "client_id": "flytectl",
            "device_code": asked["device_code"]}
    with pytest.raises(OAuthError) as pending:
        server.token(poll, None)
    assert pending.value.error == "authorization_pending"
    # The person types the code in lower case, without the dash.
    typed = asked["user_code"].replace("-", "").lower()
    assert server.devices.pending(typed).client_id == "flytectl"
    assert server.devices.answer(typed, "alice", ("ml",), approve=True)
    answer = server.token(poll, None)
    assert server.tokens.identity(answer["access_token"]).groups == ("ml",) and "refresh_token" in answer
    with pytest.raises(OAuthError) as used:
        server.token(poll, None)
    assert used.value.error == "expired_token"
    with pytest.raises(OAuthError, match="issued to client flytectl"):
        server.token({**poll, "client_id": "robot", "client_secret": "pw"}, None)


def test_a_denied_or_expired_device_gets_no_token(server, tmp_path):
    steps = _device_server(server, tmp_path)
    denied = server.device_authorization({"client_id": "flytectl"}, None)
    server.devices.answer(denied["user_code"], "alice", (), approve=False)
    with pytest.raises(OAuthError) as err:
        server.token({"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "client_id": "flytectl",
                      "device_code": denied["device_code"]}, None)
    assert err.value.error == "access_denied"
    late = server.device_authorization({"client_id": "flytectl"}, None)
    steps.at += datetime.timedelta(seconds=601)
    assert server.devices.pending(late["user_code"]) is None
    assert not server.devices.answer(late["user_code"], "alice", (), approve=True)
