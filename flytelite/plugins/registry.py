"""The task plugin registry, keyed by task type (TaskTemplate.type). Task types no plugin runs go to the agent
plugin (plugins/agents) when there is one: flytekit's agents decide what they serve."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flytelite.context import ExecutionKey
from flytelite.plugins.machinery.core import Plugin

if TYPE_CHECKING:
    from flytelite.plugins.agents.plugin import AgentPlugin


class PluginNotFound(LookupError):
    pass


# Which plugin runs a task type in a project and domain: a name among the registry's `routed` plugins,
# or "local" for the plugin registered for the type (Config.plugin_for).
Route = Callable[[str, str, str], str]


class PluginRegistry:
    def __init__(self, plugins: Iterable[Plugin], routed: dict[str, Plugin] | None = None,
                 route: Route | None = None, agents: AgentPlugin | None = None):
        """`plugins` run the task types they name; `route` may send a task type of a project and domain to
        one of the `routed` plugins instead (the kubernetes plugin, by config); `agents` runs the task types
        its configuration claims, and any other type."""
        plugins = list(plugins)
        self.routed = dict(routed or {})
        self.agents = agents
        self.plugins = plugins + list(self.routed.values()) + ([agents] if agents is not None else [])
        self.route = route
        self._by_type: dict[str, Plugin] = {}
        for plugin in plugins:
            for task_type in plugin.task_types:
                self._by_type[task_type] = plugin

    def get(self, task_type: str, key: ExecutionKey | None = None) -> Plugin:
        """The plugin that runs this task type (for execution `key`'s project and domain)."""
        if self.agents is not None and self.agents.router.claims(task_type):
            return self.agents
        if self.route is not None and key is not None:
            name = self.route(task_type, key[0], key[1])
            if name in self.routed:
                plugin = self.routed[name]
                if task_type not in plugin.task_types:
                    raise PluginNotFound(f"the configuration sends task type {task_type!r} to the {name} plugin, "
                                         f"which runs task types {', '.join(plugin.task_types)}")
                return plugin
        found = self._by_type.get(task_type) or self.agents
        if found is None:
            raise PluginNotFound(
                f"no plugin runs tasks of type {task_type!r}; flytelite runs task types "
                f"{', '.join(sorted(self._by_type))}"
            )
        return found

    def setup(self, loop) -> None:
        for plugin in self.plugins:
            plugin.setup(loop)

    def close(self) -> None:
        for plugin in self.plugins:
            plugin.close()


def default_plugins(ctx) -> PluginRegistry:
    from flytelite.plugins.container import RawContainerPlugin
    from flytelite.plugins.echo import EchoPlugin
    from flytelite.plugins.local_process import LocalProcessPlugin

    routed: dict[str, Plugin] = {}
    if ctx.config.uses_kubernetes:
        from flytelite.plugins.kubernetes.plugin import KubernetesPlugin

        routed["kubernetes"] = KubernetesPlugin(ctx)
    agents = None
    if ctx.config.agent_service.enabled:
        from flytelite.plugins.agents.plugin import AgentPlugin

        agents = AgentPlugin(ctx)
    local = LocalProcessPlugin(ctx)
    # Both start processes on this machine: they share its task slots.
    container = RawContainerPlugin(ctx, local.slots)
    return PluginRegistry([local, container, EchoPlugin()], routed, ctx.config.plugin_for, agents)
