"""The engine's public face: a WorkQueue of executions, a pool of workers, periodic resync.

On start the engine claims the lease of every unfinished execution no other live replica holds and
queues it (this is what makes a restart resume); see leases.py. Workers take one execution at a time
from the queue (never the same one twice at once) and run an evaluation round in a thread, since rounds
do blocking database, blob and process work; rounds start one at a time unless one is waiting on I/O
(round_gate.py). An execution another replica holds is left to it. The
resync renews this replica's leases, takes over expired ones and queues what it holds. The engine
never serves the API; admin wakes it with notify().
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from flytelite.context import Context, ExecutionKey
from flytelite.metrics import OWN, PROPELLER
from flytelite.plugins.registry import PluginRegistry, default_plugins
from flytelite.propeller.clients import AdminClients
from flytelite.propeller.events import EventRecorder, EventSink
from flytelite.propeller.leases import LeaseLost, Leases
from flytelite.propeller.nodes.executor import NodeExecutor
from flytelite.propeller.nodes.registry import HandlerRegistry, default_handlers
from flytelite.propeller.queue import QueueShutDown, WorkQueue
from flytelite.propeller.round_gate import RoundGate
from flytelite.propeller.workflow_executor import WorkflowExecutor

log = logging.getLogger(__name__)
T = TypeVar("T")
# While launches wait for their group commit (store/group_commit.py), a worker waits before its next round
# (looking every YIELD_POLL seconds, at most YIELD_MAX): a caller waits for each launch's reply, nobody for
# a round. A burst of CreateExecution calls is then answered first, not after the rounds of those before it.
YIELD_POLL = 0.02
YIELD_MAX = 1.0


class Engine:
    def __init__(self, ctx: Context, sink: EventSink, plugins: PluginRegistry | None = None,
                 handlers: HandlerRegistry | None = None, clients: AdminClients | None = None,
                 replica_id: str | None = None, peers: Callable[[], int] | None = None):
        """`sink` and `clients` are how the engine reaches admin (its events, child executions, signals,
        recovery); without clients, nodes that need admin fail their rounds saying so. `replica_id` names
        this process in the leases it holds (a fresh one by default); `peers` counts the live engine
        replicas on the database, this one included (see leases.py; none: this replica takes every free one)."""
        self.ctx, self.sink = ctx, sink
        cfg = ctx.config.engine
        self.replica_id = replica_id or uuid.uuid4().hex[:16]
        self.leases = Leases(ctx, self.replica_id, cfg.lease_seconds, peers)
        # Executions whose lease this replica held when it last claimed or renewed (read by workers).
        self._held: set[ExecutionKey] = set()
        self.plugins = plugins if plugins is not None else default_plugins(ctx)
        self.handlers = handlers if handlers is not None else default_handlers(self.plugins)
        self.queue: WorkQueue[ExecutionKey] = WorkQueue()
        self.mirror = None
        if cfg.state == "kubernetes":
            from flytelite.propeller.crd.mirror import FlyteWorkflowMirror

            self.mirror = FlyteWorkflowMirror(ctx)
        self.executor = WorkflowExecutor(
            ctx, EventRecorder(sink, ctx.clock), NodeExecutor(self.handlers, cfg.max_system_retries), self._wake,
            clients=clients, leases=self.leases, mirror=self.mirror, plugins=self.plugins,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: ThreadPoolExecutor | None = None
        # The resync's own thread: renewing the leases must not queue behind the rounds on the workers' threads.
        self._resync_thread: ThreadPoolExecutor | None = None
        self._tasks: list[asyncio.Task] = []
        self._pending: set[ExecutionKey] = set()
        self._round_gate = RoundGate()
        self.rounds = 0
        # Workers evaluating a round now.
        self._busy = 0
        metrics = ctx.metrics
        metrics.gauge(f"{PROPELLER}free_workers_count", "Number of workers free",
                      lambda: max(1, cfg.workers) - self._busy)
        metrics.gauge(f"{PROPELLER}main_depth", "Executions waiting in the work queue", lambda: len(self.queue))
        metrics.gauge(f"{OWN}leases:held", "Executions whose lease this replica holds", lambda: len(self._held))

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        workers = max(1, self.ctx.config.engine.workers)
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="propeller")
        self._resync_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="propeller-resync")
        self.queue.bind(loop)
        self._loop = loop
        self.plugins.setup(loop)
        self.handlers.setup()
        if self.mirror is not None:
            await loop.run_in_executor(self._threads, self.mirror.start)
        for key in await loop.run_in_executor(self._threads, self._claim_all):
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
        if self.mirror is not None:
            self.mirror.stop()
        for threads in (self._threads, self._resync_thread):
            if threads is not None:
                threads.shutdown(wait=True)
        try:
            self.leases.release()
        except Exception:  # noqa: BLE001 - the leases then expire instead
            log.exception("releasing the leases of replica %s failed", self.replica_id)
        self._held.clear()
        self._loop = None

    def notify(self, key: ExecutionKey) -> None:
        """Wake the engine for one execution; safe to call from any thread."""
        key = ExecutionKey(*key)
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

    async def _in_thread(self, fn: Callable[..., T], *args) -> T:
        """Run a worker's `fn(*args)` in a thread, through the round gate (round_gate.py)."""
        loop = asyncio.get_running_loop()
        return await self._round_gate.run(lambda: loop.run_in_executor(self._threads, fn, *args))

    async def _worker(self, index: int) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            self._busy += 1
            try:
                await self._yield_to_launches()
                if key not in self._held and not await self._in_thread(self._claim, key):
                    continue  # another replica drives it
                start = time.perf_counter()
                result = await self._in_thread(self.executor.handle, key)
                self.ctx.metrics.observe(f"{PROPELLER}round:round_total_ms", "Latency per round",
                                         (time.perf_counter() - start) * 1000.0)
                self.ctx.metrics.inc(f"{PROPELLER}round:success_count", "Round succeeded")
                self.ctx.metrics.inc(f"{PROPELLER}round:streak_length",
                                     "Consecutive rounds of one execution in one pass (fast follow)", result.streak)
                self.rounds += 1
                self.queue.forget(key)
                if not result.done and result.requeue_after is not None:
                    self.queue.add_after(key, result.requeue_after)
            except LeaseLost as e:
                log.warning("%s", e)
                self._held.discard(key)
                self.queue.forget(key)
            except Exception as e:  # noqa: BLE001 - a bad round must not kill the worker
                self.ctx.metrics.inc(f"{PROPELLER}round:error_count", "Round failed")
                log.exception("evaluating execution %s failed", "/".join(key))
                try:
                    failed = await self._in_thread(self.executor.record_failed_round, key, e)
                except Exception:  # noqa: BLE001
                    log.exception("recording the failed round of %s failed", "/".join(key))
                    failed = False
                if not failed:
                    self.queue.add_rate_limited(key)
            finally:
                self._busy -= 1
                self.queue.done(key)

    async def _yield_to_launches(self) -> None:
        launches = self.ctx.db.group_commit
        if not launches.waiting:
            return
        deadline = asyncio.get_running_loop().time() + YIELD_MAX
        while launches.waiting and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(YIELD_POLL)

    async def _resync(self) -> None:
        """Periodically renew this replica's leases, take over expired ones and queue every execution it
        holds: nothing stays stuck if a wake-up was lost or a replica died. Runs at least three times per
        lease period, so a live replica's leases never lapse."""
        cfg = self.ctx.config.engine
        interval = min(cfg.resync_seconds, cfg.lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:  # neither through the round gate nor on the workers' threads: it must not wait behind rounds
                for key in await asyncio.get_running_loop().run_in_executor(self._resync_thread, self._claim_all):
                    self.queue.add(key)
            except Exception:  # noqa: BLE001
                log.exception("resync failed")

    def _claim_all(self) -> list[ExecutionKey]:
        held = self.leases.claim()
        self._held = set(held)
        return held

    def _claim(self, key: ExecutionKey) -> bool:
        if self.leases.claim([key]):
            self._held.add(key)
            return True
        return False
