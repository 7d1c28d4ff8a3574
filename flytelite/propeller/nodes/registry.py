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
    from flytelite.propeller.nodes.end import EndHandler
    from flytelite.propeller.nodes.start import StartHandler
    from flytelite.propeller.nodes.task import TaskHandler

    return HandlerRegistry([StartHandler(), EndHandler(), TaskHandler(plugins)])
