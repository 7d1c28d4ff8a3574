"""flytelite's one configuration object: typed dataclasses, read from flags and an optional YAML file.

`Config` holds the top-level keys; each block of the YAML file (engine, s3, kubernetes, ...) is a dataclass in
a module of its own here, and every one is importable from this package.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from flytelite.config.agents import AgentServiceConfig
from flytelite.config.auth import AuthConfig
from flytelite.config.compute import DaskConfig, RayConfig, SparkConfig
from flytelite.config.engine import EngineConfig
from flytelite.config.grpc import GrpcConfig
from flytelite.config.kubernetes import KubernetesConfig
from flytelite.config.literal_offloading import LiteralOffloadingConfig
from flytelite.config.logs import LoggingConfig
from flytelite.config.notifications import NotificationsConfig
from flytelite.config.remote_data import RemoteDataConfig
from flytelite.config.retention import GcConfig, parse_duration
from flytelite.config.s3 import S3Config
from flytelite.config.scheduler import SchedulerConfig
from flytelite.config.task_resources import TaskResourcesConfig
from flytelite.config.tracing import TracingConfig

__all__ = [
    "DEFAULT_DOMAINS", "DEFAULT_PORT", "DEFAULT_PROJECT", "AgentServiceConfig", "AuthConfig", "Config", "DaskConfig",
    "EngineConfig", "GcConfig", "GrpcConfig", "KubernetesConfig", "LiteralOffloadingConfig", "LoggingConfig",
    "NotificationsConfig", "RayConfig", "RemoteDataConfig", "S3Config", "SchedulerConfig", "SparkConfig",
    "TaskResourcesConfig", "TracingConfig", "expand_environment", "parse_duration",
]

DEFAULT_PORT = 30080
DEFAULT_PROJECT = "flytesnacks"
DEFAULT_DOMAINS = ("development", "staging", "production")

ROLES = ("all", "api", "engine")
# Keys of the YAML file that hold a section (a dataclass of their own).
SECTIONS = ("engine", "scheduler", "s3", "kubernetes", "remote_data", "grpc", "literal_offloading", "gc",
            "notifications", "agent_service", "spark", "ray", "dask", "task_resources", "logging", "tracing")
# Where a task type can be sent (config `plugins`): "local" runs attempts on this machine (as local processes,
# or on the compute engine the type's plugin starts), "kubernetes" as pods, "agents" through flytekit agents.
TASK_PLUGINS = ("local", "kubernetes", "agents")

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_environment(value: Any, environ: Mapping[str, str], where: str) -> Any:
    """The configuration with every `${NAME}` in its strings replaced by that environment variable (how a
    Kubernetes Secret's database URL or keys reach the file of a ConfigMap); an unset one is an error."""
    if isinstance(value, dict):
        return {k: expand_environment(v, environ, where) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_environment(v, environ, where) for v in value]
    if not isinstance(value, str):
        return value

    def lookup(match: re.Match) -> str:
        name = match.group(1)
        if name not in environ:
            raise ValueError(f"{where} refers to ${{{name}}}, which is not set in the environment")
        return environ[name]

    return _ENV_REFERENCE.sub(lookup, value)


@dataclass
class Config:
    # The server's own folder: its SQLite database, blob store, logs and attempts' folders unless configured
    # elsewhere.
    home: Path = field(default_factory=lambda: Path(os.path.expanduser("~/.flytelite")))
    # The address the public port (and metrics_port) listens on: localhost, this machine's loopback addresses,
    # unless told otherwise. 0.0.0.0 (IPv4) or :: (IPv6 too) serve every interface; without `auth` anyone who
    # reaches the machine can then run code as the server's user, and the server warns at start.
    host: str = "localhost"
    # The public port: the gRPC API, the REST API and the console, all on this one port.
    port: int = DEFAULT_PORT
    # The URL clients and task processes reach the API at (signed upload URLs, log and console links, the
    # API address eager tasks call): a load balancer in front of several replicas, or this machine's name.
    # Empty: http://localhost:<port>, and nothing for an engine-only replica.
    public_url: str = ""
    # SQLAlchemy URL; empty means a SQLite file under home.
    database_url: str = ""
    # How long a PostgreSQL connection keeps being tried while the database refuses it (a restart, a
    # failover) before a request is answered UNAVAILABLE, naming the database.
    database_retry_seconds: float = 15.0
    # A port of its own serving GET /metrics (0: none; the public port serves it too): how Prometheus scrapes
    # an engine-only replica, which has no public port.
    metrics_port: int = 0
    # Upgrade the database's schema when the server starts. Off (replicas whose Deployment runs
    # `flytelite db upgrade` first): a server refuses a schema older than its own, naming both.
    migrate_on_start: bool = True
    # Blob store root: a local folder (default: <home>/blobs) or an fsspec URL such as s3://bucket/prefix.
    storage_root: str = ""
    # Endpoint, region and credentials of S3 when storage_root is an s3:// URL.
    s3: S3Config = field(default_factory=S3Config)
    # Container image -> Python interpreter that runs its tasks; "default" is used for unknown images.
    images: dict[str, str] = field(default_factory=dict)
    # Raw-container image (flytekit ContainerTask) -> how its command runs here: "local" (as a process on this
    # machine) or a command prefix (e.g. "nice -n 10"). Unlisted images are not run (flytelite pulls nothing).
    raw_container_images: dict[str, str] = field(default_factory=dict)
    # How the engine runs executions and where their task processes run.
    engine: EngineConfig = field(default_factory=EngineConfig)
    # Task type -> plugin ("local", "kubernetes" or "agents") for every project. Unlisted task types run
    # locally.
    plugins: dict[str, str] = field(default_factory=dict)
    # "<project>/<domain>" (or a whole "<project>") -> task type -> plugin, over `plugins` there.
    project_plugins: dict[str, dict[str, str]] = field(default_factory=dict)
    # The cluster of the task types `plugins` sends to "kubernetes".
    kubernetes: KubernetesConfig = field(default_factory=KubernetesConfig)
    # Task types run by flytekit agents (plugins/agents): which agent server runs which type.
    agent_service: AgentServiceConfig = field(default_factory=AgentServiceConfig)
    # Spark tasks run on this machine: a Spark per attempt, or the master named here.
    spark: SparkConfig = field(default_factory=SparkConfig)
    # Ray tasks run on this machine: a Ray cluster per attempt, or the one named here.
    ray: RayConfig = field(default_factory=RayConfig)
    # Dask tasks run on this machine: a Dask cluster per attempt, or the scheduler named here.
    dask: DaskConfig = field(default_factory=DaskConfig)
    # Tasks' default and largest resources.
    task_resources: TaskResourcesConfig = field(default_factory=TaskResourcesConfig)
    # Lifetime of signed upload URLs.
    upload_url_seconds: int = 3600
    # The largest file an upload URL takes.
    max_upload_bytes: int = 1024 * 1024 * 1024
    # How much execution data the API returns inline.
    remote_data: RemoteDataConfig = field(default_factory=RemoteDataConfig)
    # The largest messages the gRPC API takes and gives.
    grpc: GrpcConfig = field(default_factory=GrpcConfig)
    # The server's log lines.
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    # OpenTelemetry traces.
    tracing: TracingConfig = field(default_factory=TracingConfig)
    # Large task outputs as blobs of their own.
    literal_offloading: LiteralOffloadingConfig = field(default_factory=LiteralOffloadingConfig)
    # How long finished executions are kept.
    gc: GcConfig = field(default_factory=GcConfig)
    # E-mail for notifications.
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)
    # How launch plans' schedules run.
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    # What this process runs: "all" (API, console, engine and scheduler), "api" (API and console only: an
    # engine replica on the same database runs the executions) or "engine" (engine and scheduler, no port).
    role: str = "all"
    # Authentication (flytelite as its own OAuth2 server, see flytelite/auth); off unless configured.
    auth: AuthConfig = field(default_factory=AuthConfig)
    # TLS on the public port: its certificate (a PEM file). flytekit then connects with insecure: false (and
    # caCertFilePath for a certificate it does not already trust).
    tls_cert: str = ""
    # The certificate's private key (a PEM file; with tls_cert, or neither).
    tls_key: str = ""
    # What tasks verify the server with (a PEM file; default: the certificate itself, right for a self-signed
    # one).
    tls_ca_file: str = ""

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key go together: give both PEM files, or neither")
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        for where, choices in [("plugins", self.plugins)] + [
                (f"project_plugins[{k!r}]", v) for k, v in self.project_plugins.items()]:
            bad = {t: p for t, p in choices.items() if p not in TASK_PLUGINS}
            if bad:
                raise ValueError(f"{where} sends task types to unknown plugins {bad}; plugins are "
                                 f"{', '.join(TASK_PLUGINS)}")
        if self.public_url and urlsplit(self.public_url).scheme not in ("http", "https"):
            raise ValueError(f"public_url must be an http:// or https:// URL, not {self.public_url!r}")
        self.public_url = self.public_url.rstrip("/")

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    @property
    def serves_api(self) -> bool:
        return self.role in ("all", "api")

    @property
    def runs_engine(self) -> bool:
        return self.role in ("all", "engine")

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'flytelite.db'}"

    @property
    def blob_root(self) -> str:
        return self.storage_root or str(self.home / "blobs")

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def work_dir(self) -> Path:
        return self.home / "work"

    @property
    def attempts_dir(self) -> Path:
        """Where task attempts' folders go (engine.attempts_dir, else the work folder)."""
        return Path(self.engine.attempts_dir) if self.engine.attempts_dir else self.work_dir

    def plugin_for(self, task_type: str, project: str, domain: str) -> str:
        """Which plugin runs attempts of this task type in this project and domain ("local" by default)."""
        for scope in (f"{project}/{domain}", project):
            choice = self.project_plugins.get(scope, {}).get(task_type)
            if choice:
                return choice
        return self.plugins.get(task_type, "local")

    @property
    def uses_kubernetes(self) -> bool:
        return "kubernetes" in self.plugins.values() or any(
            "kubernetes" in v.values() for v in self.project_plugins.values())

    def interpreter_for(self, image: str) -> str:
        """The Python interpreter that runs tasks of this image (the server's own by default)."""
        return self.images.get(image) or self.images.get("default") or sys.executable

    def raw_container_runner(self, image: str) -> list[str] | None:
        """The command prefix that runs a raw container of this image locally ([] for "local"); None if unmapped."""
        runner = self.raw_container_images.get(image)
        if runner is None:
            return None
        return [] if runner.strip() in ("", "local") else shlex.split(runner)

    @classmethod
    def load(cls, path: Path | None = None, **overrides) -> Config:
        """Defaults, then the YAML file (if given), then explicit overrides (flags)."""
        data: dict = {}
        if path is not None:
            data = expand_environment(yaml.safe_load(Path(path).read_text()) or {}, os.environ, str(path))
        cfg = cls()
        for key, value in data.items():
            if key in SECTIONS:
                setattr(cfg, key, dataclasses.replace(getattr(cfg, key), **value))
            elif key == "auth":
                cfg.auth = AuthConfig.from_yaml(value)
            elif key == "home":
                cfg.home = Path(os.path.expanduser(value))
            elif hasattr(cfg, key):
                setattr(cfg, key, value)
            else:
                raise ValueError(f"unknown configuration key {key!r} in {path}")
        for key, value in overrides.items():
            if value is not None:
                setattr(cfg, key, Path(value).expanduser() if key == "home" else value)
        cfg.__post_init__()
        return cfg
