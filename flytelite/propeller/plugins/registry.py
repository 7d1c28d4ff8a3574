"""The task plugin registry, keyed by task type (TaskTemplate.type)."""

from __future__ import annotations

from collections.abc import Iterable

from flytelite.propeller.plugins.core import Plugin


class PluginNotFound(LookupError):
    pass


class PluginRegistry:
    def __init__(self, plugins: Iterable[Plugin]):
        self.plugins = list(plugins)
        self._by_type: dict[str, Plugin] = {}
        for plugin in self.plugins:
            for task_type in plugin.task_types:
                self._by_type[task_type] = plugin

    def get(self, task_type: str) -> Plugin:
        plugin = self._by_type.get(task_type)
        if plugin is None:
            raise PluginNotFound(
                f"no plugin runs tasks of type {task_type!r}; flytelite runs task types "
                f"{', '.join(sorted(self._by_type))}"
            )
        return plugin

    def setup(self, loop) -> None:
        for plugin in self.plugins:
            plugin.setup(loop)

    def close(self) -> None:
        for plugin in self.plugins:
            plugin.close()


def default_plugins(ctx) -> PluginRegistry:
    from flytelite.propeller.plugins.container import RawContainerPlugin
    from flytelite.propeller.plugins.echo import EchoPlugin
    from flytelite.propeller.plugins.local_process import LocalProcessPlugin

    return PluginRegistry([LocalProcessPlugin(ctx), RawContainerPlugin(ctx), EchoPlugin()])
