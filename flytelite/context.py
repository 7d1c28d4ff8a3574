"""The handles every layer receives from the composition root (no hidden singletons)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from flytelite.config import Config
from flytelite.idl.times import Clock
from flytelite.metrics import Metrics
from flytelite.runs.updates import RunUpdates
from flytelite.storage import BlobStore
from flytelite.store.db import Database
from flytelite.store.versions import VersionCache
from flytelite.tracing import Tracing

if TYPE_CHECKING:
    from flytelite.auth.setup import Auth


class Caller(Protocol):
    """The signed-in caller of the API call being served (flytelite/auth/roles.py sets it)."""

    @property
    def name(self) -> str:
        """Who executions it creates record as their creator (ExecutionMetadata.principal)."""

    @property
    def client_id(self) -> str:
        """The OAuth client its token was issued to."""

    @property
    def scopes(self) -> tuple[str, ...]:
        """Its token's scopes."""

    def may_view(self, project: str) -> bool:
        """Whether lists may show it this project."""

    def allows(self, permission: str, project: str, domain: str) -> bool:
        """Whether its roles give it `permission` (view, launch, register, admin) in the project and domain."""


# The caller of the call this thread serves; None without authentication.
CALLER: ContextVar[Caller | None] = ContextVar("flytelite_caller", default=None)


class ExecutionKey(NamedTuple):
    """A workflow execution: the engine's queue key and the primary key of its FlyteWorkflow row. A tuple,
    so rows and plain (project, domain, name) tuples compare and hash equal to it."""

    project: str
    domain: str
    name: str


def _no_engine(_key: ExecutionKey) -> None:
    pass


@dataclass
class Context:
    config: Config
    db: Database
    blobs: BlobStore
    clock: Clock = field(default_factory=Clock)
    # Wakes the engine for one execution; thread-safe. Set by the server once propeller runs.
    notify_engine: Callable[[ExecutionKey], None] = _no_engine
    # Base URL clients reach this server at (signed upload URLs, log links, console links).
    public_url: str = ""
    # True once every component is serving (GET /healthz answers 200 from then on, unless `unhealthy`).
    ready: bool = False
    # Why the server cannot do its work now (the database cannot be written, the blob store cannot be
    # reached), found by the replica's heartbeat; empty when it can. GET /healthz answers 503 with it.
    unhealthy: str = ""
    # Authentication (flytelite/auth) when the configuration turns it on; None leaves every route open.
    auth: Auth | None = None
    # What admin derived from registered entity versions (they never change), e.g. launch targets.
    versions: VersionCache = field(default_factory=VersionCache)
    # What GET /metrics serves (flytelite/metrics.py).
    metrics: Metrics = field(default_factory=Metrics)
    # Spans (flytelite/tracing.py); off by default.
    tracing: Tracing = field(default_factory=Tracing)
    # Wakes the watch streams of Flyte 2 runs when their actions change.
    run_updates: RunUpdates = field(default_factory=RunUpdates)

    def health(self) -> tuple[int, str]:
        """What GET /healthz answers: its status and why."""
        if not self.ready:
            return 503, "starting"
        unhealthy = self.unhealthy
        return (503, unhealthy) if unhealthy else (200, "ok")
