"""flytelite's one configuration object: typed dataclasses, read from flags and an optional YAML file."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import socket
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

DEFAULT_PORT = 30080
DEFAULT_PROJECT = "flytesnacks"
DEFAULT_DOMAINS = ("development", "staging", "production")


@dataclass
class EngineConfig:
    # Threads that evaluate rounds. Rounds start one at a time unless the running one waits on I/O
    # (propeller/round_gate.py): more threads help only when rounds wait (agents, S3, the Kubernetes API).
    workers: int = 8
    # Seconds between resyncs of every unfinished workflow; events wake workflows sooner.
    resync_seconds: float = 5.0
    # Retries of system errors (process lost or killed), on top of the user's retries.
    max_system_retries: int = 3
    # Nodes of an execution that run at once when neither its launch nor its launch plan sets max parallelism.
    default_max_parallelism: int = 25
    # Seconds an execution's lease lasts without renewal: how long the executions of a replica that died
    # wait before another replica takes them over (propeller/leases.py). Renewed every third of it. Also the
    # lease of the scheduler's leadership (server/leadership.py), renewed every quarter of it.
    lease_seconds: float = 15.0
    # The machine this replica runs on, recorded with every task process it starts (empty: the host
    # name). A replica adopts the running task processes of a dead replica only on the same machine; on
    # another machine their attempts end as system errors and are retried. Replicas in containers that
    # share a host name but not their processes need names of their own.
    machine: str = ""
    # Fork python-task attempts from a pre-imported zygote per interpreter (see plugins/warm)
    # instead of starting a new interpreter each time; attempts that cannot run warm run cold.
    warm_workers: bool = True
    # Seconds a first attempt waits for its interpreter's zygote to import flytekit before running cold.
    warm_start_seconds: float = 60.0
    # How many task processes run on this machine at once, cold or warm, whatever the executions' and maps'
    # parallelism (0: 16 per processor, at most one per 64 MiB of memory; see plugins/slots.py).
    # An attempt that finds every one taken waits in QUEUED, as a pod waits for room on its node.
    max_task_processes: int = 0
    # The earlier name of max_task_processes, which it sets when that is 0 (it bounded warm attempts only).
    warm_pool_size: int = 0
    # Seconds an attempt may wait for a busy worker of its group (the tasks of one code version; the items of
    # its map tasks) while the group has as many busy workers as processors, before it gets a process of its
    # own (0: never waits; see plugins/warm/zygote.py; a worker whose item ran 0.1 s is not busy).
    # Fewer processes than items in flight keep the processors' caches warm, and the server's rounds take the
    # items' news in batches meanwhile (see LocalProcessPlugin._warm_news). An attempt sent while more of its group's wait than
    # there are processors reports QUEUED until it starts (LocalProcessPlugin._sent); one that waits behind
    # fewer counts as running, as one given to an idle worker does.
    warm_queue_seconds: float = 1.0
    # Where task attempts' folders go (their working folder with the unpacked code, their pid files), each
    # deleted after its attempt; empty: <home>/work. Their temp folders are in the server's temp folder. A
    # folder on a tmpfs (such as /dev/shm/flytelite) keeps that churn of small files off the disk: on an ext4
    # without a journal, creating a file soon after many were deleted costs the kernel a scan past each of
    # them (docs/how-to/task-environments.md). Tasks' files in it then take memory: leave it on the disk for
    # tasks that write large ones.
    attempts_dir: str = ""
    # Where executions show besides the database: "" (nowhere) or "kubernetes" (each execution also a
    # FlyteWorkflow object in its namespace, as on a Flyte cluster; see propeller/crd).
    state: str = ""

    def __post_init__(self) -> None:
        self.machine = self.machine or socket.gethostname()
        if self.state not in ("", "kubernetes"):
            raise ValueError(f"engine.state must be empty or 'kubernetes', not {self.state!r}")
        if self.lease_seconds <= 0:
            raise ValueError(f"engine.lease_seconds must be more than 0, not {self.lease_seconds}")
        if self.warm_pool_size < 0:
            raise ValueError(f"engine.warm_pool_size must be 0 or more, not {self.warm_pool_size}")
        if self.max_task_processes < 0:
            raise ValueError(f"engine.max_task_processes must be 0 (from the machine) or more, not "
                             f"{self.max_task_processes}")
        self.max_task_processes = self.max_task_processes or self.warm_pool_size
        self.attempts_dir = os.path.expanduser(self.attempts_dir)
        if self.attempts_dir and not os.path.isabs(self.attempts_dir):
            raise ValueError(f"engine.attempts_dir must be an absolute path, not {self.attempts_dir!r}")
        if self.warm_queue_seconds < 0:
            raise ValueError(f"engine.warm_queue_seconds must be 0 (off) or more, not {self.warm_queue_seconds}")


ROLES = ("all", "api", "engine")
# Keys of the YAML file that hold a section (a dataclass of their own).
SECTIONS = ("engine", "scheduler", "s3", "kubernetes", "remote_data", "grpc", "literal_offloading", "gc",
            "notifications", "agent_service", "spark", "ray", "dask", "task_resources", "logging", "tracing")


# What the scheduler does with slots that came due while it was not running (see flytelite/scheduler).
CATCHUP_POLICIES = ("all", "latest", "none")


@dataclass
class SchedulerConfig:
    # Launch the executions of active schedules (false: no schedule fires on this server).
    enabled: bool = True
    # Seconds between two looks at the active schedules.
    tick_seconds: float = 1.0
    # Missed slots: "all" runs every one (Flyte's behaviour), "latest" only the newest, "none" skips them.
    catchup: str = "all"
    # A slot counts as missed when it is older than this when the scheduler comes to it.
    catchup_grace_seconds: float = 60.0
    # Time zone cron schedules are read in (Flyte's scheduler reads them in UTC with use_utc_tz).
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if self.catchup not in CATCHUP_POLICIES:
            raise ValueError(f"scheduler.catchup must be one of {', '.join(CATCHUP_POLICIES)}, "
                             f"not {self.catchup!r}")


# S3 addressing styles botocore knows; "" picks "path" when an endpoint is set (MinIO, moto), "auto" otherwise.
S3_ADDRESSING_STYLES = ("", "path", "virtual", "auto")


@dataclass
class S3Config:
    """How the server, its tasks and the URLs it signs reach S3 when storage_root is s3://bucket/prefix.

    Empty fields fall back to the usual AWS variables (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION
    or AWS_DEFAULT_REGION); empty credentials leave them to botocore's own chain (AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, ~/.aws, an instance role), which task processes inherit too.
    """

    # e.g. http://localhost:30002 for MinIO or another S3-compatible server; empty: AWS itself.
    endpoint: str = ""
    # The bucket's region; empty: AWS_REGION or AWS_DEFAULT_REGION.
    region: str = ""
    # Static credentials, with secret_access_key; empty: botocore's own chain (AWS_ACCESS_KEY_ID, ~/.aws,
    # a role), which task processes inherit.
    access_key_id: str = ""
    # The secret of access_key_id.
    secret_access_key: str = ""
    # The endpoint as clients (pyflyte, FlyteRemote, browsers) reach it, for presigned URLs, when it differs
    # from the one the server and its tasks use (a cluster-internal name, say). Empty: endpoint.
    public_endpoint: str = ""
    # path, virtual or auto (botocore's); empty: path when an endpoint is set, auto otherwise.
    addressing_style: str = ""

    def __post_init__(self) -> None:
        if self.addressing_style not in S3_ADDRESSING_STYLES:
            raise ValueError(f"s3.addressing_style must be one of path, virtual, auto (or empty), "
                             f"not {self.addressing_style!r}")
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("s3.access_key_id and s3.secret_access_key go together: set both or neither "
                             "(neither leaves credentials to the AWS variables and ~/.aws)")

    def resolved(self, environ: dict[str, str] | None = None) -> S3Config:
        """A copy with the endpoint, region and addressing style filled in from the AWS variables."""
        env = os.environ if environ is None else environ
        endpoint = self.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
        return dataclasses.replace(
            self, endpoint=endpoint,
            region=self.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "",
            public_endpoint=self.public_endpoint or endpoint,
            addressing_style=self.addressing_style or ("path" if endpoint else "auto"))


# The program of a raw-container pod's downloader and uploader (plugins/kubernetes/copilot_main.py).
COPILOT_MODULE = "flytelite.plugins.kubernetes.copilot_main"
# Where a task type can be sent (config `plugins`): "local" runs attempts on this machine (as local processes,
# or on the compute engine the type's plugin starts), "kubernetes" as pods, "agents" through flytekit agents.
TASK_PLUGINS = ("local", "kubernetes", "agents")


@dataclass
class KubernetesConfig:
    """How the kubernetes task plugin reaches a cluster and shapes the pods of task attempts
    (plugins/kubernetes); used for the task types `plugins` sends there."""

    # A kubeconfig file; empty: the pod's own service account when flytelite runs in the cluster.
    kubeconfig: str = ""
    # The kubeconfig's context to use; empty: its current context.
    context: str = ""
    # Namespace of a project and domain's pods (FlyteAdmin's namespace_mapping.template default).
    namespace_template: str = "{{ project }}-{{ domain }}"
    # Create a missing namespace the first time an attempt needs it.
    create_namespaces: bool = True
    # Task image -> the name the cluster knows it by (for clusters whose images are named differently);
    # "default" for every image not listed.
    images: dict[str, str] = field(default_factory=dict)
    # The imagePullPolicy of task pods: Always, IfNotPresent or Never.
    image_pull_policy: str = "IfNotPresent"
    # Requests of a task that names none (its limit, when it names one, otherwise); a missing limit is the
    # request, as FlytePropeller sets it, except for CPU: a task that names no CPU gets default_cpu_limit
    # (empty: none, so it may use idle cores; FlytePropeller would cap it at its request). FlytePropeller's
    # default-cpus / default-memory are 1000m / 1024Mi; small requests fit more pods on a laptop's cluster.
    default_cpu: str = "100m"
    # CPU limit of a task that names no CPU; empty: none.
    default_cpu_limit: str = ""
    # Memory request of a task that names none, and its limit when it names none.
    default_memory: str = "1Gi"
    # Service account of pods whose execution names none (empty: the namespace's default).
    service_account: str = ""
    # What interruptible attempts get (FlytePropeller's interruptible-tolerations / -node-selector).
    interruptible_tolerations: list[dict] = field(default_factory=list)
    # Node selector of interruptible attempts' pods.
    interruptible_node_selector: dict[str, str] = field(default_factory=dict)
    # Extra env vars of every pod (FlytePropeller's default-env-vars).
    env: dict[str, str] = field(default_factory=dict)
    # With authentication on: the Secret flytelite writes into each task namespace with the task client's
    # secret (key client_secret, as Flyte's flyte-secret-auth), which pods mount at /etc/secrets.
    task_client_secret: str = "flyte-secret-auth"
    # Host folders mounted into every pod at the same path (a single-node cluster on the server's machine:
    # the task interpreter's environment; a local blob store is mounted by itself).
    host_mounts: list[str] = field(default_factory=list)
    # Run pods in the node's network (FlytePropeller's enable-host-networking-pod): on a single-node cluster,
    # pods then reach services on the machine's localhost, such as an S3 server.
    host_network: bool = False
    # Delete finished pods (FlytePropeller keeps them until the FlyteWorkflow goes); keep failed ones to read.
    delete_finished_pods: bool = True
    # Keep failed pods, to read them, even when delete_finished_pods is on.
    keep_failed_pods: bool = False
    # Most attempt pods not yet finished at once, over all executions (0: no cap): a 10,000-item map task
    # waits in QUEUED instead of flooding the apiserver.
    max_pods_in_flight: int = 500
    # FlytePropeller's image-pull-backoff-grace-period: ImagePullBackOff fails the attempt after this.
    image_pull_grace_seconds: float = 180.0
    # A PyTorchJob or MPIJob the training operator has not started this long after its creation fails
    # (flyteplugins' kf-operator timeout; 0: wait forever).
    kubeflow_timeout_seconds: float = 60.0
    # Raw containers (flytekit ContainerTask) with data config get their inputs laid out and their outputs
    # collected by two containers beside theirs (FlytePropeller's co-pilot): `copilot_command` in
    # `copilot_image`, an image with flytelite installed (empty: the image "default" in `images` maps to).
    copilot_image: str = ""
    # The co-pilot containers' command, run in copilot_image.
    copilot_command: list[str] = field(default_factory=lambda: ["python3", "-m", COPILOT_MODULE])

    def __post_init__(self) -> None:
        if self.max_pods_in_flight < 0:
            raise ValueError(f"kubernetes.max_pods_in_flight must be 0 (no cap) or more, not {self.max_pods_in_flight}")
        if self.image_pull_policy not in ("Always", "IfNotPresent", "Never"):
            raise ValueError(f"kubernetes.image_pull_policy must be Always, IfNotPresent or Never, "
                             f"not {self.image_pull_policy!r}")


TASK_RESOURCE_NAMES = ("cpu", "memory", "gpu", "ephemeral_storage")


@dataclass
class TaskResourcesConfig:
    """The server's task resources (FlyteAdmin's `task_resources`): at launch each task's container gets its
    requests from these `defaults` where it names none, and no request or limit above these `limits`, unless
    TASK_RESOURCE matchable attributes say otherwise for its project, domain or workflow. Keys: cpu, memory,
    gpu, ephemeral_storage, as Kubernetes quantities ("500m", "1Gi"). Empty (the default): tasks keep theirs."""

    # Requests of a task's container that names none: resource -> quantity.
    defaults: dict[str, str] = field(default_factory=dict)
    # The most a task's requests and limits may be: resource -> quantity.
    limits: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, values in (("defaults", self.defaults), ("limits", self.limits)):
            unknown = set(values) - set(TASK_RESOURCE_NAMES)
            if unknown:
                raise ValueError(f"task_resources.{what} has {', '.join(sorted(unknown))}; the resources are "
                                 f"{', '.join(TASK_RESOURCE_NAMES)}")


MB = 1024 * 1024


@dataclass
class RemoteDataConfig:
    """How much execution data the Get*Data RPCs return inline (FlyteAdmin's `remoteData`).

    A LiteralMap of `max_size_bytes` or more comes back as a link only (`full_inputs` / `full_outputs`
    empty, the UrlBlob's `url` a signed download link and `bytes` its size), as FlyteAdmin does with
    signed URLs on; flytekit's FlyteRemote then downloads it. 0 returns everything inline.
    """

    # Execution data of this size or more comes back as a link only (0: always inline).
    max_size_bytes: int = 2 * MB
    # Lifetime of those links.
    signed_url_seconds: int = 3600

    def __post_init__(self) -> None:
        if self.max_size_bytes < 0:
            raise ValueError(f"remote_data.max_size_bytes must be 0 (always inline) or more, not {self.max_size_bytes}")
        if self.signed_url_seconds <= 0:
            raise ValueError(f"remote_data.signed_url_seconds must be more than 0, not {self.signed_url_seconds}")


LOG_FORMATS = ("text", "json")


@dataclass
class TracingConfig:
    """OpenTelemetry traces (flytelite/tracing.py), sent over OTLP/HTTP or OTLP/gRPC."""

    # Send traces (off by default).
    enabled: bool = False
    # How spans reach the collector: "http" (OTLP/HTTP, protobuf) or "grpc" (OTLP/gRPC).
    protocol: str = "http"
    # The collector: its traces URL for http (default http://localhost:4318/v1/traces), its address for grpc
    # (default http://localhost:4317; https:// for TLS).
    endpoint: str = ""
    # Share of the traces started here that are kept (parent-based: a caller's sampled trace is kept).
    sampler_ratio: float = 1.0
    # The service name the spans carry.
    service_name: str = "flytelite"

    def __post_init__(self) -> None:
        if not 0.0 <= self.sampler_ratio <= 1.0:
            raise ValueError(f"tracing.sampler_ratio must be between 0 and 1, not {self.sampler_ratio}")
        if self.protocol not in ("http", "grpc"):
            raise ValueError(f"tracing.protocol must be http (OTLP/HTTP) or grpc (OTLP/gRPC), not {self.protocol!r}")
        if self.endpoint and urlsplit(self.endpoint).scheme not in ("http", "https"):
            raise ValueError(f"tracing.endpoint must be an http:// or https:// URL, not {self.endpoint!r}")

    @property
    def collector(self) -> str:
        """The endpoint, or the protocol's usual one on this machine."""
        return self.endpoint or ("http://localhost:4317" if self.protocol == "grpc" else "http://localhost:4318/v1/traces")


@dataclass
class LoggingConfig:
    """The server's log lines (flytelite/logs.py)."""

    # "text" (one line per record) or "json" (one JSON object per line, with the execution, node and attempt
    # a record was logged for).
    format: str = "text"
    # The level of every logger (`flytelite start --log-level` overrides it), and levels of some, by
    # logger name (a component: e.g. {"flytelite.propeller": "debug", "flytelite.scheduler": "warning"}).
    level: str = "info"
    # A level per logger name, e.g. {"flytelite.propeller": "debug"}.
    levels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ValueError(f"logging.format must be one of {', '.join(LOG_FORMATS)}, not {self.format!r}")
        for name, level in {"logging.level": self.level, **{f"logging.levels[{k!r}]": v
                                                            for k, v in self.levels.items()}}.items():
            if level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
                raise ValueError(f"{name} must be debug, info, warning, error or critical, not {level!r}")


@dataclass
class GrpcConfig:
    """Largest gRPC messages the API takes and gives (FlyteAdmin's `server.grpc.maxMessageSizeBytes`, one value
    for both there). flytekit itself reads at most 20 MiB per reply, so raising the send limit past that helps
    other clients only; large execution data travels as links (remote_data) instead."""

    # Largest request the API takes: a larger one gets RESOURCE_EXHAUSTED naming this key.
    max_receive_message_bytes: int = 64 * MB
    # Largest reply the API sends: a larger one gets RESOURCE_EXHAUSTED naming this key.
    max_send_message_bytes: int = 64 * MB

    def __post_init__(self) -> None:
        for key in ("max_receive_message_bytes", "max_send_message_bytes"):
            if getattr(self, key) <= 0:
                raise ValueError(f"grpc.{key} must be more than 0, not {getattr(self, key)}")


@dataclass
class LiteralOffloadingConfig:
    """FlytePropeller's `literal-offloading-config`: task outputs (and gathered map-task outputs) of
    `min_size_mb` or more are written to a blob of their own and passed on as a Literal with
    `offloaded_metadata`; `max_size_mb` or more fails the task. Tasks registered with an SDK older than
    `supported_sdk_versions` names cannot read such inputs and fail with LiteralOffloadingNotSupported.
    On by default (Flyte's default is off because of old SDKs; flytelite's clients are flytekit 1.16)."""

    # Offload large outputs (on by default, unlike Flyte).
    enabled: bool = True
    # Outputs of this many MB or more are offloaded.
    min_size_mb: int = 10
    # Outputs of this many MB or more fail the task.
    max_size_mb: int = 1000
    # RuntimeMetadata.RuntimeType name -> least SDK version that reads offloaded literals.
    supported_sdk_versions: dict[str, str] = field(default_factory=lambda: {"FLYTE_SDK": "1.13.14"})

    def __post_init__(self) -> None:
        if not 0 < self.min_size_mb < self.max_size_mb:
            raise ValueError(f"literal_offloading needs 0 < min_size_mb < max_size_mb, not {self.min_size_mb} "
                             f"and {self.max_size_mb}")


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as `30d`, `12h`, `90m`, `45s`, `2w` or `1d12h`; ValueError otherwise."""
    match = re.fullmatch(r"(?:\d+(?:\.\d+)?[smhdw])+", text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a duration: write a number and a unit (s, m, h, d, w), e.g. 30d or 12h")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smhdw])", text))


@dataclass
class GcConfig:
    """Retention (`flytelite gc`): finished executions older than `older_than` go, with their data, logs and
    cache entries. Empty: the server never collects by itself (`flytelite gc --older-than` still does)."""

    # Age past which finished executions go, e.g. 30d or 12h; empty: the server does not collect.
    older_than: str = ""
    # Seconds between two collections inside the server (one replica collects: the "gc" leader).
    interval_seconds: float = 86400.0
    # Audit trail events (admin/audit.py) older than this go at each collection; empty: `older_than`'s age.
    audit_older_than: str = ""

    def __post_init__(self) -> None:
        for value in (self.older_than, self.audit_older_than):
            if value:
                parse_duration(value)
        if self.interval_seconds <= 0:
            raise ValueError(f"gc.interval_seconds must be more than 0, not {self.interval_seconds}")


# Flyte's default e-mail subject and body (flyteadmin_config.yaml's `notifications.emailer`); the variables are
# FlyteAdmin's: project, domain, name, phase, error, workflow.* and launch_plan.* (project/domain/name/version).
DEFAULT_EMAIL_SUBJECT = 'Notice: Execution "{{ name }}" has {{ phase }} in "{{ domain }}".'
DEFAULT_EMAIL_BODY = (
    'Execution "{{ name }}" has {{ phase }} in "{{ domain }}". View details at '
    '<a href="{{ console_url }}">{{ console_url }}</a>. {{ error }}')
STARTTLS_MODES = ("auto", "always", "never")


@dataclass
class NotificationsConfig:
    """E-mail for the notifications of launch plans and executions (FlyteAdmin's `notifications` with the SMTP
    emailer). Email, Slack and PagerDuty notifications all go out as e-mail to their recipients, as in Flyte.
    Empty `smtp_host`: nothing is sent (Flyte's "local" type); notifications are then only logged."""

    # The SMTP server; empty: nothing is sent, notifications are only logged.
    smtp_host: str = ""
    # The SMTP server's port.
    smtp_port: int = 25
    # Login when set (the server must offer AUTH); the password may also come from `smtp_password_env`.
    smtp_username: str = ""
    # The login's password, or the environment variable smtp_password_env names that holds it.
    smtp_password: str = ""
    # The environment variable holding the login's password.
    smtp_password_env: str = ""
    # STARTTLS: "auto" when the server offers it (FlyteAdmin's behaviour), "always" (fail without it), "never".
    starttls: str = "auto"
    # Accept the SMTP server's TLS certificate without checking it.
    smtp_skip_tls_verify: bool = False
    # The From address of the mails.
    sender: str = "flyte-notifications@example.com"
    # The subject's template (Flyte's default). Variables: {{ project }} {{ domain }} {{ name }} {{ phase }}
    # {{ error }}, {{ workflow.project|domain|name|version }}, {{ launch_plan.project|domain|name|version }}
    # and {{ console_url }}.
    subject: str = DEFAULT_EMAIL_SUBJECT
    # The body's template, with the subject's variables; an Email notification's own `template` replaces it.
    body: str = DEFAULT_EMAIL_BODY
    # A mail that could not be sent is tried again after retry_seconds, doubling up to max_retry_seconds,
    # until give_up_seconds after it was queued (0: never gives up). A permanent refusal (5xx) ends it at once.
    retry_seconds: float = 5.0
    # The longest wait between two tries of a mail.
    max_retry_seconds: float = 300.0
    # No more tries of a mail this long after it was queued (0: never gives up).
    give_up_seconds: float = 7 * 86400.0
    # Seconds between two looks at the outbox for mails due.
    poll_seconds: float = 1.0
    # Seconds the SMTP server may take to connect or to answer a command.
    smtp_timeout_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.starttls not in STARTTLS_MODES:
            raise ValueError(f"notifications.starttls must be one of {', '.join(STARTTLS_MODES)}, "
                             f"not {self.starttls!r}")
        for key in ("retry_seconds", "max_retry_seconds", "poll_seconds", "smtp_timeout_seconds"):
            if getattr(self, key) <= 0:
                raise ValueError(f"notifications.{key} must be more than 0, not {getattr(self, key)}")
        if self.give_up_seconds < 0:
            raise ValueError(f"notifications.give_up_seconds must be 0 (never) or more, not {self.give_up_seconds}")

    @property
    def enabled(self) -> bool:
        return bool(self.smtp_host)

    def password(self) -> str:
        return self.smtp_password or (os.environ.get(self.smtp_password_env, "") if self.smtp_password_env else "")


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
    # All state: the SQLite database flytelite.db, the blob store blobs/, task logs logs/, task folders work/
    # (flag --home).
    home: Path = field(default_factory=lambda: Path(os.path.expanduser("~/.flytelite")))
    # The address to listen on (flag --host).
    host: str = "0.0.0.0"
    # One port for gRPC (the FlyteAdmin API) and HTTP (uploads, logs, REST, console) (flag --port).
    port: int = DEFAULT_PORT
    # The URL clients and task processes reach the API at (signed upload URLs, log and console links, the
    # API address eager tasks call): a load balancer in front of several replicas, or this machine's name.
    # Empty: http://localhost:<port>, and nothing for an engine-only replica.
    public_url: str = ""
    # SQLAlchemy URL; empty means a SQLite file under home.
    database_url: str = ""
    # A port of its own serving GET /metrics (0: none; the public port serves it too): how Prometheus scrapes
    # an engine-only replica, which has no public port.
    metrics_port: int = 0
    # Upgrade the database's schema when the server starts. Off (replicas whose Deployment runs
    # `flytelite db upgrade` first): a server refuses a schema older than its own, naming both.
    migrate_on_start: bool = True
    # Blob store root: a local folder (default: <home>/blobs) or an fsspec URL such as s3://bucket/prefix.
    storage_root: str = ""
    # Endpoint, region and credentials of S3 when storage_root is s3://... (see S3Config).
    s3: S3Config = field(default_factory=S3Config)
    # Container image -> Python interpreter that runs its tasks; "default" is used for unknown images.
    images: dict[str, str] = field(default_factory=dict)
    # Raw-container image (flytekit ContainerTask) -> how its command runs here: "local" (as a process on this
    # machine) or a command prefix (e.g. "nice -n 10"). Unlisted images are not run (flytelite pulls nothing).
    raw_container_images: dict[str, str] = field(default_factory=dict)
    # The engine: its threads, resyncs, leases, task processes and warm workers.
    engine: EngineConfig = field(default_factory=EngineConfig)
    # Task type -> plugin ("local", "kubernetes" or "agents") for every project; `project_plugins` overrides it
    # for a "<project>/<domain>" (or a whole "<project>"). Unlisted task types run locally.
    plugins: dict[str, str] = field(default_factory=dict)
    # "<project>/<domain>" or "<project>" -> {task type -> plugin}, ahead of `plugins`.
    project_plugins: dict[str, dict[str, str]] = field(default_factory=dict)
    kubernetes: KubernetesConfig = field(default_factory=KubernetesConfig)
    # Task types run by flytekit agents (plugins/agents): which agent server runs which type.
    agent_service: AgentServiceConfig = field(default_factory=AgentServiceConfig)
    # The compute engines' task types run on this machine: a cluster per attempt, or one named here.
    spark: SparkConfig = field(default_factory=SparkConfig)
    # Where ray tasks run: a Ray cluster per attempt, or the one named here.
    ray: RayConfig = field(default_factory=RayConfig)
    # Where dask tasks run: a Dask cluster per attempt, or the one named here.
    dask: DaskConfig = field(default_factory=DaskConfig)
    task_resources: TaskResourcesConfig = field(default_factory=TaskResourcesConfig)
    # Lifetime of signed upload URLs.
    upload_url_seconds: int = 3600
    # Largest upload to flytelite's own signed URLs (a local blob store; S3 uploads go to the bucket).
    max_upload_bytes: int = 1024 * 1024 * 1024
    remote_data: RemoteDataConfig = field(default_factory=RemoteDataConfig)
    grpc: GrpcConfig = field(default_factory=GrpcConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    tracing: TracingConfig = field(default_factory=TracingConfig)
    literal_offloading: LiteralOffloadingConfig = field(default_factory=LiteralOffloadingConfig)
    gc: GcConfig = field(default_factory=GcConfig)
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)
    # Cron and fixed-rate schedules of active launch plans.
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    # What this process runs: "all" (API, console, engine and scheduler), "api" (API and console only: an
    # engine replica on the same database runs the executions) or "engine" (engine and scheduler, no port).
    role: str = "all"
    # Authentication (flytelite as its own OAuth2 server, see flytelite/auth); off unless configured.
    auth: AuthConfig = field(default_factory=AuthConfig)
    # TLS on the public port (PEM files): flytekit then connects with insecure: false (and caCertFilePath for a
    # certificate it does not already trust). tls_ca_file is what tasks verify the server with (default: the
    # certificate itself, right for a self-signed one).
    tls_cert: str = ""
    # The PEM private key of tls_cert (flag --tls-key).
    tls_key: str = ""
    # What task processes verify the server's certificate with; empty: tls_cert.
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
