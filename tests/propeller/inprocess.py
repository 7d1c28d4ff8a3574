"""An in-process task plugin for node-executor tests: each task is a Python function over input values.

A function returns a dict of outputs, raises to fail the attempt (Recoverable -> retryable user
error, anything else -> permanent user error, SystemLost -> retryable system error), or returns
KEEP_RUNNING to keep the attempt running until the test lets it finish.
"""

from __future__ import annotations

import asyncio
import threading

from flytelite.plugins.machinery.core import Plugin, PluginPhase, PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.registry import PluginRegistry
from flytelite.propeller.engine import Engine
from flytelite.propeller.nodes.registry import default_handlers
from tests.propeller import harness as h
from tests.propeller.harness import literal_map, python_value

KEEP_RUNNING = object()
USER, SYSTEM = 1, 2


class Recoverable(Exception):
    pass


class SystemLost(Exception):
    pass


class InProcessPlugin(Plugin):
    id = "in-process"
    task_types = ("in-process",)

    def __init__(self, functions: dict):
        self.functions = functions
        self.calls: list[tuple[str, int]] = []
        self.running: set[str] = set()
        self.max_running = 0
        self.aborted: list[str] = []
        self._lock = threading.Lock()

    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        name = tctx.task.id.name.rsplit(".", 1)[-1]
        if tctx.state.get("done"):
            return PluginPhaseInfo(PluginPhase.SUCCESS)
        inputs = {k: python_value(v) for k, v in tctx.inputs.literals.items()}
        if not tctx.state.get("started"):
            tctx.state["started"] = True
            self.calls.append((tctx.node_id, tctx.attempt))
        try:
            result = self.functions[name](inputs, tctx.attempt)
        except Recoverable as e:
            self._stop(tctx.node_id)
            return PluginPhaseInfo.failure("Recoverable", str(e), kind=USER, retryable=True)
        except SystemLost as e:
            self._stop(tctx.node_id)
            return PluginPhaseInfo.failure("ProcessLost", str(e), kind=SYSTEM, retryable=True)
        except Exception as e:  # noqa: BLE001
            self._stop(tctx.node_id)
            return PluginPhaseInfo.failure("USER:ValueError", f"{type(e).__name__}: {e}", kind=USER, retryable=False)
        if result is KEEP_RUNNING:
            with self._lock:
                self.running.add(tctx.node_id)
                self.max_running = max(self.max_running, len(self.running))
            return PluginPhaseInfo(PluginPhase.RUNNING)
        self._stop(tctx.node_id)
        tctx.ctx.blobs.write_proto(f"{tctx.output_prefix}/outputs.pb", literal_map(result))
        tctx.state["done"] = True
        return PluginPhaseInfo(PluginPhase.SUCCESS)

    def _stop(self, node_id: str) -> None:
        with self._lock:
            self.running.discard(node_id)

    def abort(self, tctx: TaskExecutionContext) -> None:
        self._stop(tctx.node_id)
        self.aborted.append(tctx.node_id)


def registry(plugin: InProcessPlugin, ctx=None) -> PluginRegistry:
    plugins = [plugin]
    if ctx is not None:
        from flytelite.plugins.local.plugin import LocalProcessPlugin

        plugins.append(LocalProcessPlugin(ctx))
    return PluginRegistry(plugins)


def engine_for(ctx, plugin: InProcessPlugin, sink=None) -> tuple[Engine, h.RecordingSink]:
    """An engine whose tasks run in `plugin` (no other plugin), and the sink its events go to."""
    sink = sink or h.RecordingSink()
    plugins = registry(plugin)
    return Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins)), sink


def run_engine(ctx, plugin: InProcessPlugin, key, *, during=None, timeout: float = 60.0):
    """Run one execution to its end on a new engine (engine_for); `during(engine)` is awaited first, once
    the execution is queued. Returns (status, sink)."""

    async def go():
        engine, sink = engine_for(ctx, plugin)
        await engine.start()
        try:
            engine.notify(key)
            if during is not None:
                await during(engine)
            return await h.run_to_completion(engine, ctx, key, timeout), sink
        finally:
            await engine.stop()

    return asyncio.run(go())
