"""FlyteliteServer: builds the context, migrates the database and runs admin, propeller and HTTP."""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import socket
import ssl
import threading
import uuid
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import uvicorn
from flyteidl.service import auth_pb2_grpc

from flytelite.admin.audit import AuditInterceptor, AuditLog
from flytelite.admin.bootstrap import ensure_default_project
from flytelite.admin.engine_clients import (
    AdminLaunchPlanExecutor,
    AdminRecoveryClient,
    AdminSignalClient,
    AdminTaskReader,
)
from flytelite.admin.events import EventSink
from flytelite.admin.executions import running_creator
from flytelite.admin.grpc_errors import ErrorInterceptor
from flytelite.admin.grpc_metrics import MetricsInterceptor, TracingInterceptor
from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.admin.message_limits import MessageLimitInterceptor, server_options
from flytelite.auth.device import DeviceGrants
from flytelite.auth.grpc import AuthInterceptor, AuthMetadataService, AuthorizationInterceptor
from flytelite.auth.setup import build_auth
from flytelite.config import Config
from flytelite.console.app import build_app
from flytelite.context import Context
from flytelite.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from flytelite.metrics import EXECUTION_MANAGER, OWN, Metrics
from flytelite.notifications.processor import NotificationProcessor
from flytelite.plugins.kubernetes.names import namespace
from flytelite.plugins.registry import PluginRegistry
from flytelite.propeller.clients import AdminClients
from flytelite.propeller.engine import Engine
from flytelite.scheduler.launcher import admin_launcher
from flytelite.scheduler.scheduler import Scheduler
from flytelite.server.collector import GC, Collector
from flytelite.server.health import Health
from flytelite.server.leadership import SCHEDULER, Leadership
from flytelite.server.mux import PortMux, TlsPortMux, beyond_loopback, port_mux
from flytelite.server.replicas import ReplicaRegistry
from flytelite.server.wakeups import Listener, publisher
from flytelite.storage import BlobStore
from flytelite.store.db import Database
from flytelite.store.executions import count_active
from flytelite.tracing import Tracing

log = logging.getLogger(__name__)


def build_context(config: Config) -> Context:
    config.home.mkdir(parents=True, exist_ok=True)
    config.logs_dir.mkdir(parents=True, exist_ok=True)
    config.work_dir.mkdir(parents=True, exist_ok=True)
    config.attempts_dir.mkdir(parents=True, exist_ok=True)
    db = Database(config.db_url, config.database_retry_seconds)
    if config.migrate_on_start:
        db.migrate()
    else:
        db.require_current()
    ctx = Context(config=config, db=db, blobs=BlobStore(config.blob_root, config.s3), tracing=Tracing(config.tracing))
    db.time_queries(lambda ms: ctx.metrics.observe(f"{OWN}database:statement_ms", "Time of each SQL statement", ms))
    ctx.blobs.observe = lambda op, ms: ctx.metrics.observe(f"{OWN}blobs:{op}_ms", f"Time of each blob store {op}", ms)
    if ctx.tracing.enabled:
        db.trace_statements(ctx.tracing.start_child)
        ctx.blobs.trace = ctx.tracing.start_child
    template = config.kubernetes.namespace_template
    ctx.auth = build_auth(config.auth, config.home, lambda: ctx.public_url,
                          (lambda p, d: namespace(template, p, d)) if config.uses_kubernetes else None)
    if ctx.auth is not None:
        ctx.auth.tasks.creator_of = lambda p, d, n: running_creator(ctx, p, d, n)
        ctx.auth.server.devices = DeviceGrants(ctx.db, ctx.clock)
    ensure_default_project(ctx)
    return ctx


def admin_clients(ctx: Context) -> AdminClients:
    """Admin's implementations of the interfaces the engine owns, called in-process."""
    launch_plans = AdminLaunchPlanExecutor(ctx)
    return AdminClients(launch_plans=launch_plans, launch_plan_reader=launch_plans, task_reader=AdminTaskReader(ctx),
                        recovery=AdminRecoveryClient(ctx), signals=AdminSignalClient(ctx))


def _tls_context(config: Config) -> ssl.SSLContext | None:
    """TLS for the public port; ALPN offers http/1.1 first (browsers, requests, and the flyte SDK's connect
    clients, which offer both and are served by the HTTP app) and h2 (gRPC clients, which offer only h2)."""
    if not config.tls:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_cert, config.tls_key)
    context.set_alpn_protocols(["http/1.1", "h2"])
    return context


# Clients' keepalive pings are welcome between calls: flytekit's channels ping every 30 s whether a call is on
# or not, and gRPC's defaults (a ping at most every 5 minutes without data, none without a call) answered a
# client idle for a minute, such as `pyflyte run --wait` between polls, with GOAWAY "too_many_pings", which it
# prints as an error before it reconnects.
KEEPALIVE_OPTIONS = [("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.min_ping_interval_without_data_ms", 1000)]


class FlyteliteServer:
    def __init__(self, config: Config, plugins: PluginRegistry | None = None):
        """`plugins`: the engine's task plugins (None: the ones `config` sets up)."""
        self.config = config
        self.plugins = plugins
        self.ctx: Context | None = None
        self.port: int | None = None
        self.engine: Engine | None = None
        self.scheduler: Scheduler | None = None
        self.collector: Collector | None = None
        self.notifications: NotificationProcessor | None = None
        self._mux: PortMux | TlsPortMux | None = None
        self._grpc: grpc.Server | None = None
        self._http: QuietHttpServer | None = None
        self._listener: Listener | None = None
        self._metrics_http: ThreadingHTTPServer | None = None
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        """Start everything, serve until SIGTERM/SIGINT, then stop cleanly."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()

    async def start(self) -> None:
        cfg = self.config
        ctx = self.ctx = build_context(cfg)
        ctx.public_url = cfg.public_url
        self.replica_id = uuid.uuid4().hex[:16]
        self.registry = ReplicaRegistry(ctx, self.replica_id, cfg.role)
        self._register_gauges(ctx)
        self._warn_if_exposed()
        if cfg.metrics_port:
            self._metrics_http = serve_metrics(ctx.metrics, cfg.host, cfg.metrics_port, ctx.health)
        if cfg.runs_engine:
            self.engine = Engine(ctx, EventSink(ctx), plugins=self.plugins, clients=admin_clients(ctx),
                                 replica_id=self.replica_id, peers=self.registry.live_engines)
        # Before the API serves: an execution created from the first request on wakes an engine.
        ctx.notify_engine = publisher(ctx, self.engine.notify if self.engine is not None else None)
        if cfg.serves_api:
            await self._start_api(ctx)
        if self.engine is not None:
            if not ctx.db.is_sqlite:
                self._listener = Listener(ctx, self.engine.notify)
                self._listener.start()
            await self.engine.start()
            # Every engine replica runs a scheduler; the one that leads the "scheduler" leadership launches.
            leadership = Leadership(ctx, SCHEDULER, self.replica_id, cfg.engine.lease_seconds)
            self.scheduler = Scheduler(ctx, admin_launcher(ctx), leadership=leadership)
            self._scheduler_task = asyncio.create_task(self.scheduler.run(), name="scheduler")
            if cfg.gc.older_than:
                self.collector = Collector(ctx, Leadership(ctx, GC, self.replica_id, cfg.engine.lease_seconds))
                self._collector_task = asyncio.create_task(self.collector.run(), name="gc")
            if cfg.notifications.enabled:
                self.notifications = NotificationProcessor(ctx, self.replica_id)
                self._notifications_task = asyncio.create_task(self.notifications.run(), name="notifications")
        await asyncio.to_thread(self.registry.register, ctx.public_url if cfg.serves_api else "")
        self._heartbeat_task = asyncio.create_task(self._heartbeat(), name="replica-heartbeat")
        if self._http is not None:
            while not self._http.started:
                await asyncio.sleep(0.01)
        ctx.ready = True
        self._print_banner()

    def _warn_if_exposed(self) -> None:
        cfg = self.config
        exposed = beyond_loopback(cfg.host) if cfg.serves_api or cfg.metrics_port else []
        if exposed and not cfg.auth.enabled:
            log.warning("listening on %s (host %s) with authentication off: anyone who can reach this machine "
                        "can register workflows and run code on it as this server's user. Configure `auth:`, "
                        "or listen on localhost (the default).", ", ".join(exposed), cfg.host or '""')

    async def _start_api(self, ctx: Context) -> None:
        """gRPC (FlyteAdmin's services) and HTTP (console, REST, uploads) behind one public port."""
        cfg = self.config
        # The public port first: signed URLs and log links need the address clients use, and the internal
        # listeners below, on ports the system picks, can then not be given it (one was, when a test had just
        # let the port go: the mux then spliced connections to itself until the process ran out of files).
        self._mux = port_mux(cfg.host, cfg.port, tls=_tls_context(cfg))
        self.port = await self._mux.listen()
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP. Without it a
        # keep-alive response's body waits ~40 ms behind its headers (Nagle against a delayed ACK).
        http_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        http_sock.bind(("127.0.0.1", 0))
        self._grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="admin"),
            # Tracing (when on) and metrics outermost, so refused calls have their span and count too;
            # authentication next; then the error interceptor, which maps what authorization and the limits'
            # interceptor raise like any other.
            interceptors=[*([TracingInterceptor(ctx.tracing)] if ctx.tracing.enabled else []),
                          MetricsInterceptor(ctx.metrics),
                          AuditInterceptor(AuditLog(ctx), ctx.auth.identify if ctx.auth is not None else None),
                          *([AuthInterceptor(ctx.auth)] if ctx.auth is not None else []),
                          ErrorInterceptor(),
                          *([AuthorizationInterceptor(ctx.auth)] if ctx.auth is not None else []),
                          MessageLimitInterceptor(cfg.grpc)],
            options=[*server_options(cfg.grpc), *KEEPALIVE_OPTIONS],
        )
        grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")
        await self._mux.serve(grpc_port, http_sock.getsockname()[1])
        ctx.public_url = ctx.public_url or f"{'https' if cfg.tls else 'http'}://localhost:{self.port}"
        for service in GRPC_SERVICES:
            service.add_to_server(service.servicer(ctx), self._grpc)
        if ctx.auth is not None:
            auth_pb2_grpc.add_AuthMetadataServiceServicer_to_server(AuthMetadataService(ctx.auth), self._grpc)
        self._grpc.start()
        uv_config = uvicorn.Config(build_app(ctx), log_level="warning", lifespan="off", access_log=False)
        self._http = QuietHttpServer(uv_config)
        self._http_task = asyncio.create_task(self._http.serve(sockets=[http_sock]))

    def _register_gauges(self, ctx: Context) -> None:
        def active() -> int:
            with ctx.db.session() as session:
                return count_active(session)

        ctx.metrics.gauge(f"{EXECUTION_MANAGER}active_executions", "overall count of active workflow executions",
                          active)
        ctx.metrics.gauge(f"{OWN}replicas:live_engines", "Engine replicas on this database with a recent heartbeat",
                          self.registry.live_engines)

    async def _heartbeat(self) -> None:
        """The replica's heartbeat, every third of a lease, which also tells the server's health (health.py)."""
        assert self.ctx is not None, "the heartbeat follows start()"
        health = Health(self.ctx)
        while True:
            await asyncio.sleep(self.config.engine.lease_seconds / 3)
            depth = len(self.engine.queue) if self.engine is not None else 0
            await health.beat(functools.partial(self.registry.heartbeat, depth))

    async def stop(self) -> None:
        log.info("flytelite shutting down")
        assert self.ctx is not None, "stop() follows start()"
        self.ctx.ready = False
        if self._mux is not None:
            await self._mux.stop()
        # Flyte 2's watch streams never end by themselves: the HTTP server would wait for them.
        self.ctx.run_updates.close()
        if self.scheduler is not None:
            self.scheduler.stop()
            await self._scheduler_task
        if self.collector is not None:
            self.collector.stop()
            await self._collector_task
        if self.notifications is not None:
            self.notifications.stop()
            await self._notifications_task
        if self._listener is not None:
            self._listener.stop()
        if self.engine is not None:
            await self.engine.stop()
        if self._grpc is not None:
            self._grpc.stop(grace=2).wait()
        if self._http is not None:
            self._http.stop()
            await self._http_task
        if self._metrics_http is not None:
            self._metrics_http.shutdown()
            self._metrics_http.server_close()
        self.ctx.tracing.shutdown()
        self._heartbeat_task.cancel()
        try:
            await asyncio.to_thread(self.registry.deregister)
        except Exception:  # noqa: BLE001 - its heartbeat then just grows old
            log.exception("removing replica %s from the replicas table failed", self.replica_id)
        self.ctx.db.dispose()

    def _print_banner(self) -> None:
        if self.port is None:
            print(f"flytelite engine replica {self.replica_id} is running (role engine, no port), "
                  f"home {self.config.home}", flush=True)
            return
        port, cfg = self.port, self.config
        scheme = "https" if cfg.tls else "http"
        lines = [f"flytelite is ready on port {port} (gRPC and HTTP), home {cfg.home}",
                 f"  admin endpoint: localhost:{port} ({'TLS' if cfg.tls else 'insecure'}"
                 f"{', authentication on' if cfg.auth.enabled else ''})",
                 f"  console:        {scheme}://localhost:{port}/console",
                 "Point flytekit at it:",
                 f"  export FLYTE_PLATFORM_URL=localhost:{port}",
                 f"  export FLYTE_PLATFORM_INSECURE={'false' if cfg.tls else 'true'}"]
        if cfg.tls:
            lines.append(f"  export FLYTE_PLATFORM_CA_CERT_FILE_PATH={cfg.tls_ca_file or cfg.tls_cert}")
        if cfg.auth.enabled:
            lines.append("  and set admin.authType (ClientSecret, Pkce or ExternalCommand) in its config")
        print("\n".join(lines), flush=True)


def serve_metrics(metrics: Metrics, host: str, port: int, health: Callable[[], tuple[int, str]]) -> ThreadingHTTPServer:
    """GET /metrics, and GET /healthz for probes, on a port of its own in a thread (flytelite/metrics.py): an
    engine-only replica has no public port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._answer(200, metrics.exposition(), METRICS_CONTENT_TYPE)
            elif path == "/healthz":
                status, why = health()
                self._answer(status, why.encode(), "text/plain; charset=utf-8")
            else:
                self.send_error(404, "only /metrics and /healthz are served on this port")

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args) -> None:  # scrapes and probes are not worth a log line each
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server


class QuietHttpServer(uvicorn.Server):
    """uvicorn's server without its ten wake-ups a second (it looks whether to stop every 0.1 s): an idle
    flytelite wakes for nothing. The Date header is still refreshed every second, and a stop is seen at once."""

    _stopping: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._stopping = asyncio.Event()
        if self.should_exit:
            self._stopping.set()
        counter = 0
        while not await self.on_tick(counter):  # refreshes the Date header when counter % 10 == 0
            counter = (counter + 10) % 864000
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=1.0)
            except TimeoutError:
                pass

    def stop(self) -> None:
        """Stop serving (from the event loop's thread)."""
        self.should_exit = True
        if self._stopping is not None:
            self._stopping.set()
