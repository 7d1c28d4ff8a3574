"""The grants of flytelite's authorization server (FlyteAdmin's authzserver: fosite's client-credentials,
authorization-code with PKCE and refresh-token flows over static clients).

HTTP-free: the routes in `auth/http.py` parse requests and render what this returns or raises.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from dataclasses import dataclass
from urllib.parse import unquote_plus, urlencode, urlsplit

from flytelite.auth.device import DENIED, PENDING, DeviceGrants
from flytelite.auth.secrets import check_hash_format, verify_secret
from flytelite.auth.task_clients import TaskClients
from flytelite.auth.tokens import ACCESS, CODE, DEVICE, REFRESH, SESSION, TokenIssuer
from flytelite.config.auth import CONSOLE_CLIENT_ID, AuthConfig, ClientConfig
from flytelite.errors import Unauthenticated

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
log = logging.getLogger(__name__)
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
GRANT_TYPES = ("authorization_code", "client_credentials", "refresh_token", DEVICE_CODE_GRANT)
# How long a device's user code stays valid, and how often the device may ask whether it was approved.
DEVICE_CODE_SECONDS, DEVICE_POLL_SECONDS = 600, 1
ID_TOKEN_SIGNING = ["RS256", "ES256"]


class OAuthError(Exception):
    """An RFC 6749 error answer: `error` code, a description a user can act on, and the HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


@dataclass(frozen=True)
class AuthorizeRequest:
    """A checked /oauth2/authorize request (response_type code, PKCE S256)."""

    client_id: str
    redirect_uri: str
    state: str
    scopes: tuple[str, ...]
    code_challenge: str
    nonce: str = ""


class AuthorizationServer:
    def __init__(self, config: AuthConfig, tokens: TokenIssuer, tasks: TaskClients,
                 devices: DeviceGrants | None = None):
        self.config, self.tokens, self.tasks = config, tokens, tasks
        # The device-code grant's shared state (the server sets it: it lives in the database).
        self.devices = devices
        self._task_secret = tasks.secret
        self.clients: dict[str, ClientConfig] = dict(config.clients)
        pc = config.public_client
        self.clients.setdefault(pc.client_id, ClientConfig(redirect_uris=[pc.redirect_uri], scopes=list(pc.scopes)))
        self.clients[CONSOLE_CLIENT_ID] = ClientConfig()
        for name, client in self.clients.items():
            if client.confidential:
                try:
                    check_hash_format(client.secret_hash)
                except ValueError as exc:
                    raise ValueError(f"auth.clients.{name}.secret_hash is {exc}") from None
        for name, stored in config.users.items():
            try:
                check_hash_format(stored)
            except ValueError as exc:
                raise ValueError(f"auth.users.{name} is {exc}") from None

    # -- discovery (FlyteAdmin's authzserver/metadata.go and GetPublicClientConfig)

    def metadata(self) -> dict:
        base = self.tokens.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/oauth2/authorize",
            "token_endpoint": f"{base}/oauth2/token",
            "jwks_uri": f"{base}/oauth2/jwks",
            "response_types_supported": ["code"],
            "scopes_supported": ["all", "offline", "access_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": list(GRANT_TYPES),
            "device_authorization_endpoint": f"{base}/oauth2/device/code",
        }

    def openid_configuration(self) -> dict:
        """OpenID Connect discovery: flytelite's own sign-in can serve another service as its provider."""
        return {**self.metadata(), "userinfo_endpoint": f"{self.tokens.issuer}/oauth2/userinfo",
                "scopes_supported": ["openid", "profile", "all", "offline"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ID_TOKEN_SIGNING,
                "claims_supported": ["sub", "preferred_username", "groups", "nonce"]}

    def public_client_config(self) -> dict:
        pc = self.config.public_client
        return {"client_id": pc.client_id, "redirect_uri": pc.redirect_uri, "scopes": list(pc.scopes),
                "authorization_metadata_key": self.config.header_key, "service_http_endpoint": self.tokens.issuer,
                "audience": pc.audience}

    # -- /oauth2/token

    def token(self, form: dict[str, str], basic: tuple[str, str] | None) -> dict:
        grant = form.get("grant_type", "")
        client_id, secret = basic if basic else (form.get("client_id", ""), form.get("client_secret", ""))
        if grant == "client_credentials":
            execution = self.tasks.execution_of(client_id)
            if execution is not None:
                return self._task_token(client_id, execution, secret, form.get("scope", ""))
            self._authenticate_client(client_id, secret, required=True)
            return self._issue(client_id, client_id, self._scopes(client_id, form.get("scope", "")), grant)
        if grant == "authorization_code":
            self._authenticate_client(client_id, secret, required=False)
            return self._exchange_code(client_id, form)
        if grant == "refresh_token":
            self._authenticate_client(client_id, secret, required=False)
            claims = self._verify_grant(form.get("refresh_token", ""), REFRESH, "refresh token")
            if claims["client_id"] != client_id:
                raise OAuthError("invalid_grant", f"the refresh token was issued to client {claims['client_id']}, "
                                                  f"not {client_id}")
            return self._issue(claims["sub"], client_id, tuple(claims.get("scp", "").split()), grant,
                               groups=tuple(claims.get("groups", ())))
        if grant == DEVICE_CODE_GRANT:
            self._authenticate_client(client_id, secret, required=False)
            return self._device_token(client_id, form.get("device_code", ""))
        raise OAuthError("unsupported_grant_type", f"grant_type must be one of {', '.join(GRANT_TYPES)}, "
                                                   f"not {grant!r}")

    def _task_token(self, client_id: str, execution: tuple[str, str, str], secret: str, scope: str) -> dict:
        """A token for a task of `execution`: for its creator, limited to its project."""
        if not self.tasks.authenticate(execution, _candidates(secret)):
            raise OAuthError("invalid_client", f"wrong secret for client {client_id}", 401)
        creator = self.tasks.creator_of(*execution)
        if creator is None:
            raise OAuthError("invalid_client", f"client {client_id} names no execution of this server", 401)
        scopes = tuple(s for s in scope.split() or ["all"] if s in ("all", "offline"))
        if "all" not in scopes:
            raise OAuthError("invalid_scope", f"client {client_id} asked for {scope!r}; the API needs scope 'all'")
        subject = creator or self.config.task_client_id
        kind = "client" if subject in self.clients or subject == self.config.task_client_id else "user"
        return self._issue(subject, client_id, scopes, "client_credentials", knd=kind, prj=execution[0])

    def _authenticate_client(self, client_id: str, secret: str, required: bool) -> None:
        candidates = _candidates(secret)
        if client_id == self.config.task_client_id:
            if not any(hmac.compare_digest(c.encode(), self._task_secret.encode()) for c in candidates):
                raise OAuthError("invalid_client", f"wrong secret for client {client_id}", 401)
            return
        client = self.clients.get(client_id)
        if client is None:
            raise OAuthError("invalid_client", f"unknown client {client_id!r}; clients are configured under "
                                               f"auth.clients", 401)
        if client.confidential:
            if not any(verify_secret(c, client.secret_hash) for c in candidates):
                raise OAuthError("invalid_client", f"wrong secret for client {client_id}", 401)
        elif required:
            raise OAuthError("unauthorized_client", f"client {client_id} is public (no secret); the client "
                                                    f"credentials grant needs a confidential client", 400)

    def _scopes(self, client_id: str, requested: str) -> tuple[str, ...]:
        """The scopes granted: 'all' for the API, or 'openid' for a service signing people in."""
        allowed = self.clients[client_id].scopes if client_id in self.clients else ["all"]
        asked = requested.split() or list(allowed)
        granted = tuple(s for s in asked if s in allowed)
        if "all" not in granted and "openid" not in granted:
            raise OAuthError("invalid_scope", f"client {client_id} asked for {asked}; the API needs scope 'all', "
                                              f"an OpenID sign-in 'openid' (allowed: {allowed})")
        return granted

    def _verify_grant(self, token: str, use: str, what: str) -> dict:
        if not token:
            raise OAuthError("invalid_request", f"the {what} is missing")
        try:
            return self.tokens.verify(token, use)
        except Unauthenticated as exc:
            raise OAuthError("invalid_grant", str(exc)) from None

    def _exchange_code(self, client_id: str, form: dict[str, str]) -> dict:
        claims = self._verify_grant(form.get("code", ""), CODE, "authorization code")
        if claims["client_id"] != client_id:
            raise OAuthError("invalid_grant", f"the code was issued to client {claims['client_id']}, not {client_id}")
        if claims["redirect_uri"] != form.get("redirect_uri", ""):
            raise OAuthError("invalid_grant", "redirect_uri differs from the one the code was issued for")
        if not hmac.compare_digest(pkce_challenge(form.get("code_verifier", "")), claims["challenge"]):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE)")
        return self._issue(claims["sub"], client_id, tuple(claims.get("scp", "").split()), "authorization_code",
                           groups=tuple(claims.get("groups", ())), nonce=claims.get("nonce", ""))

    def _issue(self, subject: str, client_id: str, scopes: tuple[str, ...], grant: str, groups: tuple[str, ...] = (),
               nonce: str = "", **claims) -> dict:
        """The token answer: an access token, a refresh token for 'offline', an ID token for 'openid'."""
        cfg = self.config
        scope = " ".join(scopes)
        if groups:
            claims["groups"] = list(groups)
        answer = {"access_token": self.tokens.sign(ACCESS, subject, client_id, cfg.access_token_seconds, scp=scope,
                                                   **claims),
                  "token_type": "Bearer", "expires_in": cfg.access_token_seconds, "scope": scope}
        log.info("issued an access token to %s (client %s) by the %s grant", subject, client_id, grant)
        # No refresh token for client credentials (RFC 6749 4.4.3): the client asks again with its secret.
        if grant != "client_credentials" and "offline" in scopes:
            answer["refresh_token"] = self.tokens.sign(REFRESH, subject, client_id, cfg.refresh_token_seconds,
                                                       scp=scope, **claims)
        if "openid" in scopes and grant != "client_credentials":
            answer["id_token"] = self.tokens.id_token(subject, client_id, cfg.access_token_seconds, nonce=nonce,
                                                      groups=self.user_groups(subject, groups))
        return answer

    def user_groups(self, user: str, groups: tuple[str, ...] = ()) -> list[str]:
        """A person's groups: those a token brought, and the configured groups that list them."""
        return sorted(set(groups) | {g for g, members in self.config.groups.items() if user in members})

    # -- the device-code grant (RFC 8628)

    def device_authorization(self, form: dict[str, str], basic: tuple[str, str] | None) -> dict:
        """A device asks to sign in: its device code (what it polls with) and the user code a person enters."""
        if self.devices is None:
            raise OAuthError("unsupported_grant_type", "this server has no device-code sign-in")
        client_id, secret = basic if basic else (form.get("client_id", ""), form.get("client_secret", ""))
        self._authenticate_client(client_id, secret, required=False)
        scopes = self._scopes(client_id, form.get("scope", ""))
        user_code = self.devices.open(client_id, " ".join(scopes), DEVICE_CODE_SECONDS)
        device_code = self.tokens.sign(DEVICE, "-", client_id, DEVICE_CODE_SECONDS, user_code=user_code)
        page = f"{self.tokens.issuer}/oauth2/device"
        return {"device_code": device_code, "user_code": user_code, "verification_uri": page,
                "verification_uri_complete": f"{page}?{urlencode({'user_code': user_code})}",
                "expires_in": DEVICE_CODE_SECONDS, "interval": DEVICE_POLL_SECONDS}

    def _device_token(self, client_id: str, device_code: str) -> dict:
        claims = self._verify_grant(device_code, DEVICE, "device code")
        if claims["client_id"] != client_id:
            raise OAuthError("invalid_grant", f"the device code was issued to client {claims['client_id']}, "
                                              f"not {client_id}")
        answer = self.devices.take(claims["user_code"]) if self.devices is not None else None
        if answer is None:
            raise OAuthError("expired_token", "the device code has expired or was used; start again")
        if answer.outcome == PENDING:
            raise OAuthError("authorization_pending", "nobody has approved this device's sign-in yet")
        if answer.outcome == DENIED:
            raise OAuthError("access_denied", f"{answer.subject} denied this device's sign-in")
        request = self.clients.get(client_id)
        scopes = tuple(claims.get("scp", "").split()) or tuple(request.scopes if request else ["all"])
        return self._issue(answer.subject, client_id, scopes, DEVICE_CODE_GRANT, groups=answer.groups)

    # -- /oauth2/authorize

    def check_authorize(self, params: dict[str, str]) -> AuthorizeRequest:
        client_id = params.get("client_id", "")
        client = self.clients.get(client_id)
        if client is None:
            raise OAuthError("invalid_client", f"unknown client {client_id!r}")
        redirect_uri = params.get("redirect_uri", "")
        if not self._redirect_allowed(client_id, client, redirect_uri):
            raise OAuthError("invalid_request", f"redirect_uri {redirect_uri!r} is not registered for {client_id}")
        if params.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "only response_type=code is supported")
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            raise OAuthError("invalid_request", "PKCE is required: code_challenge with code_challenge_method=S256")
        return AuthorizeRequest(client_id=client_id, redirect_uri=redirect_uri, state=params.get("state", ""),
                                scopes=self._scopes(client_id, params.get("scope", "")),
                                code_challenge=params["code_challenge"], nonce=params.get("nonce", ""))

    def _redirect_allowed(self, client_id: str, client: ClientConfig, uri: str) -> bool:
        if client_id == CONSOLE_CLIENT_ID:
            return uri == f"{self.tokens.issuer}/callback"
        if uri in client.redirect_uris:
            return True
        got = urlsplit(uri)
        for registered in map(urlsplit, client.redirect_uris):
            if (got.scheme == registered.scheme == "http" and got.hostname in LOOPBACK_HOSTS
                    and registered.hostname in LOOPBACK_HOSTS and got.path == registered.path):
                return True
        return False

    def issue_code(self, req: AuthorizeRequest, user: str, groups: tuple[str, ...] = ()) -> str:
        """The redirect that hands the client its code (and its state back)."""
        code = self.tokens.sign(CODE, user, req.client_id, self.config.authorization_code_seconds,
                                scp=" ".join(req.scopes), redirect_uri=req.redirect_uri, challenge=req.code_challenge,
                                nonce=req.nonce, groups=list(groups))
        sep = "&" if urlsplit(req.redirect_uri).query else "?"
        return f"{req.redirect_uri}{sep}{urlencode({'code': code, 'state': req.state})}"

    # -- users signing in through the browser

    def sign_in(self, user: str, password: str) -> str:
        """A sign-in session (cookie) for a user whose password matches; Unauthenticated if not."""
        stored = self.config.users.get(user)
        if stored is None or not verify_secret(password, stored):
            raise Unauthenticated("unknown user or wrong password")
        return self.session(user, ())

    def session(self, user: str, groups: tuple[str, ...]) -> str:
        """A sign-in session (cookie) for someone the server or its OpenID provider signed in."""
        return self.tokens.sign(SESSION, user, CONSOLE_CLIENT_ID, self.config.refresh_token_seconds,
                                groups=list(groups))

    def session_user(self, session: str | None) -> tuple[str, tuple[str, ...]] | None:
        """(name, groups) of a valid sign-in session, else None."""
        if not session:
            return None
        try:
            claims = self.tokens.verify(session, SESSION)
        except Unauthenticated:
            return None
        return claims["sub"], tuple(claims.get("groups", ()))


def _candidates(secret: str) -> set[str]:
    """A client's secret as sent, and form-decoded: RFC 6749 2.3.1 form-encodes it in Basic auth (flytekit
    does); many clients do not."""
    return {secret, unquote_plus(secret)}


def pkce_challenge(verifier: str) -> str:
    """RFC 7636 S256: base64url(sha256(verifier)) without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
