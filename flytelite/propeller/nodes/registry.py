"""The node handler registry: one handler per node kind. A new kind is a new module listed here."""

from __future__ import annotations

from collections.abc import Iterable

from flytelite.propeller.nodes.handler import NodeHandler, UnsupportedNodeHandler


class HandlerRegistry:
    def __init__(self, handlers: Iterable[NodeHandler]):
        self._handlers = {h.kind: h for h in handlers}

    def get(self, kind: str) -> NodeHandler:
        handler = self._handlers.get(kind)
        if handler is None:
            handler = self._handlers[kind] = UnsupportedNodeHandler(kind)
        return handler

    def kinds(self) -> list[str]:
        return sorted(k for k, h in self._handlers.items() if not isinstance(h, UnsupportedNodeHandler))

    def setup(self) -> None:
        for handler in self._handlers.values():
            handler.setup()


def default_handlers(plugins) -> HandlerRegistry:
    """Every node kind flytelite runs; `plugins` is the task plugin registry the task handler uses."""
    from flytelite.propeller.nodes.array import ArrayHandler
    from flytelite.propeller.nodes.branch import BranchHandler
    from flytelite.propeller.nodes.dynamic import DynamicNodeHandler
    from flytelite.propeller.nodes.end import EndHandler
    from flytelite.propeller.nodes.gate import GateHandler
    from flytelite.propeller.nodes.launch_plan import LaunchPlanHandler
    from flytelite.propeller.nodes.start import StartHandler
    from flytelite.propeller.nodes.subworkflow import SubworkflowHandler
    from flytelite.propeller.nodes.task import TaskHandler

    # Task nodes go through the dynamic handler, which hands them to the task handler until a task writes futures.
    return HandlerRegistry([StartHandler(), EndHandler(), DynamicNodeHandler(TaskHandler(plugins)),
                            LaunchPlanHandler(), GateHandler(), ArrayHandler(plugins), BranchHandler(),
                            SubworkflowHandler()])
