"""Signed, expiring JWTs (PyJWT): access and refresh tokens, authorization codes and browser sign-ins.

Like FlyteAdmin's stateless token store, every artefact is a JWT signed by the server's key, so replicas
that share the key accept each other's tokens and nothing is stored. `token_use` keeps the kinds apart:
an authorization code or a refresh token is never accepted as an access token.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import jwt

from flytelite.auth.keys import SigningKey
from flytelite.errors import Unauthenticated

ACCESS, REFRESH, CODE, SESSION, LOGIN, DEVICE = "access", "refresh", "code", "session", "login", "device"
# Verified access tokens remembered (each call of a client carries the same one until it expires).
SEEN_TOKENS = 4096


@dataclass(frozen=True)
class Identity:
    """Who a verified token speaks for."""

    subject: str
    client_id: str
    scopes: tuple[str, ...]
    # "user" (signed in through a browser) or "client" (its own client credentials): which grants apply.
    kind: str = "user"
    # Groups the identity provider put in the token (`groups` claim).
    groups: tuple[str, ...] = ()
    # The one project a task's token may reach; "" for any.
    project: str = ""


class TokenIssuer:
    def __init__(self, key: SigningKey, issuer: Callable[[], str], clock: Callable[[], float] = time.time):
        self._key = key
        self._issuer = issuer  # read per token: the public URL is known only once the port is bound
        self._clock = clock
        self._seen: dict[str, tuple[Identity, int]] = {}

    @property
    def issuer(self) -> str:
        return self._issuer()

    def sign(self, use: str, subject: str, client_id: str, seconds: int, **claims) -> str:
        now = int(self._clock())
        payload = {"iss": self.issuer, "aud": self.issuer, "sub": subject, "client_id": client_id,
                   "token_use": use, "iat": now, "nbf": now, "exp": now + seconds, "jti": uuid.uuid4().hex,
                   **claims}
        return self._encode(payload)

    def id_token(self, subject: str, client_id: str, seconds: int, nonce: str, groups: list[str]) -> str:
        """An OpenID Connect ID token for `client_id` (its audience): who signed in, and the client's nonce."""
        now = int(self._clock())
        payload = {"iss": self.issuer, "aud": client_id, "sub": subject, "preferred_username": subject,
                   "groups": groups, "iat": now, "exp": now + seconds, "auth_time": now}
        if nonce:
            payload["nonce"] = nonce
        return self._encode(payload)

    def _encode(self, payload: dict) -> str:
        return jwt.encode(payload, self._key.private_pem, algorithm=self._key.algorithm, headers={"kid": self._key.kid})

    def verify(self, token: str, use: str) -> dict:
        """The claims of a valid, unexpired token of this kind signed by this server; Unauthenticated if not."""
        try:
            # PyJWT checks signature, algorithm, issuer and audience; times against this issuer's clock below.
            claims = jwt.decode(token, self._key.public_pem, algorithms=[self._key.algorithm],
                                audience=self.issuer, issuer=self.issuer,
                                options={"require": ["exp", "iat", "sub", "token_use"], "verify_exp": False,
                                         "verify_iat": False, "verify_nbf": False})
        except jwt.InvalidTokenError as exc:
            raise Unauthenticated(f"the {use} token is not valid here: {exc}") from exc
        if not isinstance(claims["exp"], int) or claims["exp"] <= self._clock():
            raise Unauthenticated(f"the {use} token has expired; sign in again (flytekit does it by itself)")
        if claims.get("token_use") != use:
            raise Unauthenticated(f"a {claims.get('token_use')} token is not an {use} token")
        return claims

    def identity(self, access_token: str) -> Identity:
        """Who a valid access token speaks for; a token verified before is looked up, not verified again."""
        seen = self._seen.get(access_token)
        if seen is not None and seen[1] > self._clock():
            return seen[0]
        claims = self.verify(access_token, ACCESS)
        scopes = tuple(str(claims.get("scp", "")).split())
        if "all" not in scopes:
            # FlyteAdmin's BlanketAuthorization: every API call needs the "all" scope.
            raise Unauthenticated(f"the access token of {claims['sub']} lacks the 'all' scope the API requires")
        client_id = str(claims.get("client_id", ""))
        groups = claims.get("groups") or ()
        identity = Identity(subject=claims["sub"], client_id=client_id, scopes=scopes,
                            kind=str(claims.get("knd") or ("client" if claims["sub"] == client_id else "user")),
                            groups=tuple(str(g) for g in groups) if isinstance(groups, list) else (),
                            project=str(claims.get("prj", "")))
        if len(self._seen) >= SEEN_TOKENS:
            self._seen.clear()
        self._seen[access_token] = (identity, claims["exp"])
        return identity


def bearer_token(value: str | None) -> str:
    """The token of an `Authorization`-style value ("Bearer <token>"), or ""."""
    if not value:
        return ""
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""
