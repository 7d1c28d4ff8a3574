"""Wiring of authentication for one server process: the key, the task client's secret, the issuer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from flytelite.auth.keys import SigningKey, load_or_create, write_private
from flytelite.auth.oauth2 import AuthorizationServer
from flytelite.auth.openid import OpenIdProvider
from flytelite.auth.roles import Authorizer
from flytelite.auth.secrets import new_secret
from flytelite.auth.task_clients import TaskClients
from flytelite.auth.tokens import Identity, TokenIssuer, bearer_token
from flytelite.config.auth import AuthConfig
from flytelite.errors import Unauthenticated


@dataclass
class Auth:
    """What the API edges (gRPC interceptor, HTTP middleware) and the task environment need."""

    config: AuthConfig
    key: SigningKey
    tokens: TokenIssuer
    server: AuthorizationServer
    # The file holding the task client's secret (handed to local task processes by path).
    task_secret_file: Path
    task_secret: str
    authorizer: Authorizer
    tasks: TaskClients
    # Where people sign in, when an OpenID Connect provider is configured (else the passwords of auth.users).
    openid: OpenIdProvider | None = None

    def identity_in(self, metadata: Mapping[str, str], cookie_token: str = "") -> Identity | None:
        """Who the valid token in a call's metadata (lower-case keys), else the console's cookie token, speaks
        for; None when there is none."""
        token = self.token_in(metadata) or cookie_token
        try:
            return self.tokens.identity(token) if token else None
        except Unauthenticated:
            return None

    def identify(self, metadata: Mapping[str, str], cookie_token: str = "") -> tuple[str, str]:
        """(subject, client id) of identity_in(...), ("", "") for none (the audit trail's "who")."""
        identity = self.identity_in(metadata, cookie_token)
        return (identity.subject, identity.client_id) if identity is not None else ("", "")

    def token_in(self, metadata: Mapping[str, str]) -> str:
        """The bearer token a call carries in its metadata (lower-case keys): under the configured key, else
        `authorization`; "" for none."""
        for key in (self.config.header_key.lower(), "authorization"):
            token = bearer_token(metadata.get(key))
            if token:
                return token
        return ""


def build_auth(config: AuthConfig, home: Path, public_url: Callable[[], str],
               task_namespace: Callable[[str, str], str] | None = None) -> Auth | None:
    """Auth for this process, or None when the configuration leaves it off; `task_namespace` names the
    namespace of a project and domain when tasks run as pods."""
    if not config.enabled:
        return None
    auth_dir = home / "auth"
    key_path = Path(config.signing_key_file).expanduser() if config.signing_key_file else auth_dir / "signing-key.pem"
    key = load_or_create(key_path, generate=not config.signing_key_file)
    secret_path = (Path(config.task_client_secret_file).expanduser() if config.task_client_secret_file
                   else auth_dir / "task-client-secret")
    if not secret_path.exists():
        if config.task_client_secret_file:
            raise ValueError(f"auth.task_client_secret_file {secret_path} does not exist")
        try:
            write_private(secret_path, new_secret().encode())
        except FileExistsError:
            pass
    secret = secret_path.read_text().strip()
    tokens = TokenIssuer(key, lambda: config.issuer or public_url())
    tasks = TaskClients(config.task_client_id, secret, task_namespace)
    return Auth(config=config, key=key, tokens=tokens, server=AuthorizationServer(config, tokens, tasks),
                task_secret_file=secret_path, task_secret=secret, authorizer=Authorizer(config), tasks=tasks,
                openid=OpenIdProvider(config.openid) if config.openid is not None else None)
