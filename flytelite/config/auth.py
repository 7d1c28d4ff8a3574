"""The `auth:` block of flytelite's configuration (FlyteAdmin's auth config, self-auth server only)."""

from __future__ import annotations

from dataclasses import dataclass, field

# FlyteAdmin's defaults: the public client flytectl/flytekit use for the PKCE flow, its scopes, and the
# metadata key gRPC clients send the token under ("authorization" itself is special to Envoy).
PUBLIC_CLIENT_ID = "flytectl"
PUBLIC_REDIRECT_URI = "http://localhost:53593/callback"
DEFAULT_SCOPES = ("all", "offline")
HEADER_KEY = "flyte-authorization"
# The client the console signs users in with (authorization code + PKCE, redirect to <public URL>/callback).
CONSOLE_CLIENT_ID = "flytelite-console"
# The confidential client task attempts call the API as (FlyteAdmin's default is flytepropeller).
TASK_CLIENT_ID = "flytepropeller"


@dataclass
class ClientConfig:
    """One OAuth2 client: confidential when it has a secret hash (client credentials), public otherwise."""

    # The hash of the client's secret, as `flytelite auth hash-secret` prints it; empty: a public client.
    secret_hash: str = ""
    # Where the authorization-code flow may send a public client back; loopback URIs match on any port
    # (RFC 8252 7.3), as native apps such as flytekit pick theirs.
    redirect_uris: list[str] = field(default_factory=list)
    # The scopes the client may be granted ("all" for the API, "openid" for a service signing people in).
    scopes: list[str] = field(default_factory=lambda: list(DEFAULT_SCOPES))

    @property
    def confidential(self) -> bool:
        return bool(self.secret_hash)


@dataclass
class PublicClientConfig:
    """What GetPublicClientConfig hands flytekit for the PKCE flow (FlyteAdmin's thirdPartyConfig.flyteClient)."""

    # The public client flytekit and flytectl sign in as.
    client_id: str = PUBLIC_CLIENT_ID
    # Where the flow sends flytekit back.
    redirect_uri: str = PUBLIC_REDIRECT_URI
    # The scopes flytekit asks for.
    scopes: list[str] = field(default_factory=lambda: list(DEFAULT_SCOPES))
    # The audience flytekit asks tokens for (empty: none).
    audience: str = ""


ROLES = ("viewer", "launcher", "registrar", "admin")


@dataclass
class OpenIdConfig:
    """An OpenID Connect provider people sign in with (FlyteAdmin's auth.userAuth.openId): flytelite sends the
    browser there and back to <public URL>/oauth2/callback, which the provider must allow for this client."""

    # The provider's issuer URL; its discovery document is <issuer>/.well-known/openid-configuration.
    issuer: str = ""
    # flytelite's client id at the provider.
    client_id: str = ""
    # The client's secret (neither this nor client_secret_file for a public client).
    client_secret: str = ""
    # A file holding the client's secret (FlyteAdmin's clientSecretName).
    client_secret_file: str = ""
    # The scopes asked for at sign-in (openid among them).
    scopes: list[str] = field(default_factory=lambda: ["openid", "profile", "email"])
    # The ID token's claim naming the user (as roles and executions name them).
    username_claim: str = "preferred_username"
    # The ID token's claim listing the user's groups.
    groups_claim: str = "groups"

    def __post_init__(self) -> None:
        if not self.issuer or not self.client_id:
            raise ValueError("auth.openid needs issuer and client_id")
        if "openid" not in self.scopes:
            raise ValueError(f"auth.openid.scopes must include openid, not {self.scopes}")
        self.issuer = self.issuer.rstrip("/")


@dataclass
class RoleGrant:
    """One role granted to users, OAuth2 clients and groups in the projects and domains named (fnmatch
    patterns: "*" is every one)."""

    # viewer, launcher, registrar or admin.
    role: str = ""
    # User names granted the role.
    users: list[str] = field(default_factory=list)
    # OAuth2 client ids granted the role.
    clients: list[str] = field(default_factory=list)
    # Groups granted the role (auth.groups, or the identity provider's).
    groups: list[str] = field(default_factory=list)
    # Projects the grant holds in (patterns).
    projects: list[str] = field(default_factory=lambda: ["*"])
    # Domains the grant holds in (patterns).
    domains: list[str] = field(default_factory=lambda: ["*"])

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"auth.roles: role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if not (self.users or self.clients or self.groups):
            raise ValueError(f"auth.roles: the {self.role} grant names no users, clients or groups")
        for what in ("users", "clients", "groups", "projects", "domains"):
            value = getattr(self, what)
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"auth.roles: {what} of the {self.role} grant must be a list of names")


@dataclass
class AuthConfig:
    # On when the configuration has an `auth:` block (unless it says enabled: false).
    enabled: bool = False
    # The `iss` of issued tokens and the base of the OAuth2 endpoints; empty: the server's public URL.
    issuer: str = ""
    # Lifetime of access tokens.
    access_token_seconds: int = 30 * 60
    # Lifetime of refresh tokens.
    refresh_token_seconds: int = 60 * 60
    # Lifetime of an authorization code not yet exchanged for tokens.
    authorization_code_seconds: int = 5 * 60
    # PEM private key (RSA or EC) that signs tokens; empty: <home>/auth/signing-key.pem, generated if missing.
    # Replicas behind one public URL must share it (point them all at one file).
    signing_key_file: str = ""
    # Confidential and public clients by id (secrets as `flytelite auth hash-secret` prints them).
    clients: dict[str, ClientConfig] = field(default_factory=dict)
    # Users who sign in through the browser (console, PKCE): name -> password hash.
    users: dict[str, str] = field(default_factory=dict)
    # What flytekit is told to sign in with.
    public_client: PublicClientConfig = field(default_factory=PublicClientConfig)
    # Task attempts get this client's credentials to call the API (eager workflows, FlyteRemote in a task).
    task_client_id: str = TASK_CLIENT_ID
    # The file the task client's secret is read from (empty: <home>/auth/task-client-secret, generated).
    task_client_secret_file: str = ""
    # gRPC metadata key flytekit sends the token under (GetPublicClientConfig.authorization_metadata_key).
    header_key: str = HEADER_KEY
    # Roles per project and domain. None configured: every signed-in caller may do everything (FlyteAdmin's
    # BlanketAuthorization).
    roles: list[RoleGrant] = field(default_factory=list)
    # Groups of the users above (name -> members); a token's `groups` claim adds the identity provider's.
    groups: dict[str, list[str]] = field(default_factory=dict)
    # Sign people in through this OpenID Connect provider rather than with the passwords of `users`.
    openid: OpenIdConfig | None = None

    def __post_init__(self) -> None:
        self.clients = {k: v if isinstance(v, ClientConfig) else ClientConfig(**(v or {}))
                        for k, v in (self.clients or {}).items()}
        self.roles = [g if isinstance(g, RoleGrant) else RoleGrant(**(g or {})) for g in (self.roles or [])]
        self.groups = {str(k): list(v or []) for k, v in (self.groups or {}).items()}
        if isinstance(self.openid, dict):
            self.openid = OpenIdConfig(**self.openid)
        if isinstance(self.public_client, dict):
            self.public_client = PublicClientConfig(**self.public_client)
        for what in ("access_token_seconds", "refresh_token_seconds", "authorization_code_seconds"):
            if getattr(self, what) <= 0:
                raise ValueError(f"auth.{what} must be more than 0, not {getattr(self, what)}")
        reserved = {CONSOLE_CLIENT_ID, self.task_client_id} & set(self.clients)
        if reserved:
            raise ValueError(f"auth.clients may not define {', '.join(sorted(reserved))}: flytelite defines "
                             f"{CONSOLE_CLIENT_ID} (the console) and the task client itself")
        self.issuer = self.issuer.rstrip("/")

    @classmethod
    def from_yaml(cls, value: dict | None) -> AuthConfig:
        """The block as written: present means on, unless it says `enabled: false`."""
        value = dict(value or {})
        value.setdefault("enabled", True)
        return cls(**value)
