"""The engine's public face: a WorkQueue of executions, a pool of workers, periodic resync.

On start every unfinished FlyteWorkflow row is queued (this is what makes a restart resume).
Workers take one execution at a time from the queue (never the same one twice at once) and run
an evaluation round in a thread, since rounds do blocking database, blob and process work.
The engine never serves the API; admin wakes it with notify().
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select

from flytelite.context import Context, ExecutionKey
from flytelite.propeller.clients import AdminClients
from flytelite.propeller.events import EventRecorder, EventSink
from flytelite.propeller.node_executor import NodeExecutor
from flytelite.propeller.nodes.registry import HandlerRegistry, default_handlers
from flytelite.propeller.plugins.registry import PluginRegistry, default_plugins
from flytelite.propeller.queue import QueueShutDown, WorkQueue
from flytelite.propeller.workflow_executor import WorkflowExecutor
from flytelite.store.models import FlyteWorkflow

log = logging.getLogger(__name__)


class Engine:
    def __init__(self, ctx: Context, sink: EventSink, plugins: PluginRegistry | None = None,
                 handlers: HandlerRegistry | None = None, clients: AdminClients | None = None):
        """`sink` and `clients` are how the engine reaches admin (its events, child executions, signals,
        recovery); without clients, nodes that need admin fail their rounds saying so."""
        self.ctx, self.sink = ctx, sink
        cfg = ctx.config.engine
        self.plugins = plugins if plugins is not None else default_plugins(ctx)
        self.handlers = handlers if handlers is not None else default_handlers(self.plugins)
        self.queue = WorkQueue()
        self.executor = WorkflowExecutor(
            ctx, EventRecorder(sink, ctx.clock), NodeExecutor(self.handlers, cfg.max_system_retries), self._wake,
            clients=clients,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._tasks: list[asyncio.Task] = []
        self._pending: set[ExecutionKey] = set()
        self.rounds = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        workers = max(1, self.ctx.config.engine.workers)
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="propeller")
        self.queue.bind(loop)
        self._loop = loop
        self.plugins.setup(loop)
        self.handlers.setup()
        for key in await loop.run_in_executor(self._threads, self._unfinished):
            self.queue.add(key)
        for key in self._pending:
            self.queue.add(key)
        self._pending.clear()
        self._tasks = [asyncio.create_task(self._worker(i), name=f"propeller-worker-{i}") for i in range(workers)]
        self._tasks.append(asyncio.create_task(self._resync(), name="propeller-resync"))
        log.info("propeller started with %d workers", workers)

    async def stop(self) -> None:
        """Stop taking work and let rounds in flight finish; task processes keep running (a restart adopts them)."""
        self.queue.shutdown()
        for task in self._tasks:
            if task.get_name() == "propeller-resync":
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self.plugins.close()
        if self._threads is not None:
            self._threads.shutdown(wait=True)
        self._loop = None

    def notify(self, key: ExecutionKey) -> None:
        """Wake the engine for one execution; safe to call from any thread."""
        key = tuple(key)
        if self._loop is None:
            self._pending.add(key)
            return
        self.queue.add_threadsafe(key)

    def _wake(self, key: ExecutionKey, delay: float | None) -> None:
        loop = self._loop
        if loop is None:
            return
        if not delay:
            self.queue.add_threadsafe(key)
            return
        try:
            loop.call_soon_threadsafe(self.queue.add_after, key, delay)
        except RuntimeError:
            pass

    async def _worker(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                result = await loop.run_in_executor(self._threads, self.executor.handle, key)
                self.rounds += 1
                self.queue.forget(key)
                if not result.done and result.requeue_after is not None:
                    self.queue.add_after(key, result.requeue_after)
            except Exception as e:  # noqa: BLE001 - a bad round must not kill the worker
                log.exception("evaluating execution %s failed", "/".join(key))
                try:
                    failed = await loop.run_in_executor(self._threads, self.executor.record_failed_round, key, e)
                except Exception:  # noqa: BLE001
                    log.exception("recording the failed round of %s failed", "/".join(key))
                    failed = False
                if not failed:
                    self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def _resync(self) -> None:
        """Periodically queue every unfinished execution: nothing stays stuck if a wake-up was lost."""
        interval = self.ctx.config.engine.resync_seconds
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            try:
                for key in await loop.run_in_executor(self._threads, self._unfinished):
                    self.queue.add(key)
            except Exception:  # noqa: BLE001
                log.exception("resync failed")

    def _unfinished(self) -> list[ExecutionKey]:
        with self.ctx.db.session() as s:
            rows = s.execute(
                select(FlyteWorkflow.project, FlyteWorkflow.domain, FlyteWorkflow.name).where(FlyteWorkflow.done.is_(False))
            ).all()
        return [tuple(r) for r in rows]
