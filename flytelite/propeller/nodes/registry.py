"""Node handler registry: one handler per node kind; a new kind is a new package nodes/<kind>/ listed here."""

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
    from flytelite.propeller.nodes.array.handler import ArrayHandler
    from flytelite.propeller.nodes.branch.handler import BranchHandler
    from flytelite.propeller.nodes.dynamic.handler import DynamicNodeHandler
    from flytelite.propeller.nodes.end.handler import EndHandler
    from flytelite.propeller.nodes.gate.handler import GateHandler
    from flytelite.propeller.nodes.launch_plan.handler import LaunchPlanHandler
    from flytelite.propeller.nodes.start.handler import StartHandler
    from flytelite.propeller.nodes.subworkflow.handler import SubworkflowHandler
    from flytelite.propeller.nodes.task.handler import TaskHandler

    # Task nodes go through the dynamic handler, which hands them to the task handler until a task writes futures.
    return HandlerRegistry([StartHandler(), EndHandler(), DynamicNodeHandler(TaskHandler(plugins)),
                            LaunchPlanHandler(), GateHandler(), ArrayHandler(plugins), BranchHandler(),
                            SubworkflowHandler()])
