"""Signing people in through an OpenID Connect provider (FlyteAdmin's auth.userAuth.openId).

flytelite stays the authorization server its clients know (the console, flytekit's PKCE and device flows);
only the question "who is at the browser" goes to the provider: the authorization-code flow with PKCE and a
nonce, the code exchanged at the provider's token endpoint, the ID token's signature checked against the
provider's published keys. The person's name and groups then stand in a flytelite sign-in session.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import jwt

from flytelite.config.auth import OpenIdConfig
from flytelite.errors import Unauthenticated

log = logging.getLogger(__name__)
HTTP_SECONDS = 30
# The provider's discovery document is read again after this long (its keys may rotate).
DISCOVERY_SECONDS = 3600


@dataclass(frozen=True)
class Person:
    name: str
    groups: tuple[str, ...]


class OpenIdProvider:
    def __init__(self, config: OpenIdConfig):
        self.config = config
        self.secret = (Path(config.client_secret_file).expanduser().read_text().strip()
                       if config.client_secret_file else config.client_secret)
        self._lock = threading.Lock()
        self._discovery: tuple[float, dict] | None = None
        self._keys: jwt.PyJWKClient | None = None

    def discovery(self) -> dict:
        with self._lock:
            if self._discovery is None or time.monotonic() - self._discovery[0] > DISCOVERY_SECONDS:
                doc = _get_json(f"{self.config.issuer}/.well-known/openid-configuration")
                missing = [k for k in ("authorization_endpoint", "token_endpoint", "jwks_uri") if k not in doc]
                if missing:
                    raise Unauthenticated(f"the OpenID provider {self.config.issuer} publishes no {', '.join(missing)}")
                self._discovery = (time.monotonic(), doc)
                self._keys = jwt.PyJWKClient(doc["jwks_uri"], cache_keys=True, timeout=HTTP_SECONDS)
            return self._discovery[1]

    def authorize_url(self, redirect_uri: str, state: str, nonce: str, challenge: str) -> str:
        query = urllib.parse.urlencode({
            "client_id": self.config.client_id, "response_type": "code", "scope": " ".join(self.config.scopes),
            "redirect_uri": redirect_uri, "state": state, "nonce": nonce, "code_challenge": challenge,
            "code_challenge_method": "S256"})
        endpoint = self.discovery()["authorization_endpoint"]
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    def person(self, code: str, redirect_uri: str, verifier: str, nonce: str) -> Person:
        """Who signed in: the code exchanged, the ID token checked (signature, issuer, audience, nonce, expiry)."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": verifier, "client_id": self.config.client_id}
        if self.secret:
            form["client_secret"] = self.secret
        answer = _post_form(self.discovery()["token_endpoint"], form)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise Unauthenticated(f"the OpenID provider answered no id_token: {answer.get('error', '')}")
        assert self._keys is not None  # set by discovery()
        try:
            key = self._keys.get_signing_key_from_jwt(id_token)
            claims = jwt.decode(id_token, key.key, algorithms=["RS256", "ES256", "RS384", "ES384", "RS512"],
                                audience=self.config.client_id, issuer=self.config.issuer,
                                options={"require": ["exp", "iat", "sub"]})
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"the OpenID provider's ID token is not valid: {exc}") from exc
        if claims.get("nonce") != nonce:
            raise Unauthenticated("the ID token's nonce is not the one this sign-in sent")
        name = claims.get(self.config.username_claim) or claims["sub"]
        groups = claims.get(self.config.groups_claim) or []
        return Person(str(name), tuple(str(g) for g in groups) if isinstance(groups, list) else ())


def _get_json(url: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=HTTP_SECONDS) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, ValueError) as exc:
        raise Unauthenticated(f"cannot read the OpenID provider's {url}: {exc}") from exc


def _post_form(url: str, form: dict[str, str]) -> dict:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_SECONDS) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")[:500]
        raise Unauthenticated(f"the OpenID provider refused the sign-in's code: {exc.code} {body}") from exc
    except (urllib.error.URLError, ValueError) as exc:
        raise Unauthenticated(f"cannot reach the OpenID provider's token endpoint {url}: {exc}") from exc
