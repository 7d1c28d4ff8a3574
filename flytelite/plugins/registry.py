"""The task plugin registry: which plugin runs a task (FlytePropeller's plugin resolution in its task handler).

In order: an execution's plugin override of the task type (PLUGIN_OVERRIDE attributes, resolved at launch);
the task types the agent configuration claims go to agents (`agent_service.agent_for_task_types`,
`supported_task_types`); the `plugins` / `project_plugins` configuration may send a task type to Kubernetes
(the plugin there for that type: the Spark driver pod, an operator's job, else a pod) or to agents; a plugin
registered for the task type runs it; any other task type goes to agents when an agent serves it, and
otherwise, when the task carries a container (or a pod spec), to the default plugin, as FlytePropeller's pod
plugin is the default for task types without a plugin of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flyteidl.core import tasks_pb2

from flytelite.context import ExecutionKey
from flytelite.plugins.machinery.core import Plugin
from flytelite.plugins.machinery.target import carries_container

if TYPE_CHECKING:
    from flytelite.plugins.agents.plugin import AgentPlugin


class PluginNotFound(LookupError):
    pass


# PLUGIN_OVERRIDE attributes name plugins; flytelite's are its placements, and FlytePropeller's id of the agent
# plugin names the agents.
OVERRIDE_ALIASES = {"agent-service": "agents"}
USE_DEFAULT = 1  # flyteidl.admin.PluginOverride.USE_DEFAULT


# Which plugin runs a task type in a project and domain: a placement among the registry's `routed` ones,
# "agents", or "local" for the plugin registered for the type (Config.plugin_for).
Route = Callable[[str, str, str], str]



class PluginRegistry:
    def __init__(self, plugins: Iterable[Plugin], routed: dict[str, list[Plugin]] | None = None,
                 route: Route | None = None, agents: AgentPlugin | None = None, default: Plugin | None = None):
        """`plugins` run the task types they name; `route` may send a task type of a project and domain to a
        placement of `routed` (kubernetes, by config), whose plugin for that type runs it (else its default
        plugin), or to `agents`; `agents` runs the task types its configuration claims, and those of other
        types that an agent serves; `default` runs the rest of the tasks that carry a container."""
        plugins = list(plugins)
        self.routed = {name: list(found) for name, found in (routed or {}).items()}
        self.agents = agents
        self.default = default
        if agents is not None:
            agents.default = default
        self.plugins = (plugins + [p for found in self.routed.values() for p in found]
                        + ([agents] if agents is not None else []))
        self.route = route
        self._by_type: dict[str, Plugin] = {}
        for plugin in plugins:
            for task_type in plugin.task_types:
                self._by_type[task_type] = plugin

    def get(self, task: tasks_pb2.TaskTemplate, key: ExecutionKey | None = None,
            overrides: dict[str, list] | None = None) -> Plugin:
        """The plugin that runs this task (for execution `key`'s project and domain; `overrides`: the
        execution's plugin overrides, task type -> [plugin ids, missing-plugin behavior])."""
        task_type = task.type
        override = (overrides or {}).get(task_type)
        if override:
            chosen = self._overridden(task, *override)
            if chosen is not None:
                return chosen
        if self.agents is not None and self.agents.router.claims(task_type):
            return self.agents
        if self.route is not None and key is not None:
            name = self.route(task_type, key[0], key[1])
            if name == "agents":
                if self.agents is None:
                    raise PluginNotFound(f"the configuration sends task type {task_type!r} to agents, and the "
                                         "agent service is off (agent_service)")
                return self.agents
            if name in self.routed:
                return self._placed(name, task)
        found = self._by_type.get(task_type) or self.agents
        if found is None and self.default is not None and carries_container(task):
            found = self.default
        if found is None:
            raise PluginNotFound(
                f"no plugin runs tasks of type {task_type!r} and the task carries no container; flytelite runs "
                f"task types {', '.join(sorted(self._by_type))}, and any type whose task carries a container"
            )
        return found

    def _overridden(self, task: tasks_pb2.TaskTemplate, plugin_ids: list[str], behavior: int) -> Plugin | None:
        """The first of a plugin override's plugins this server has (a placement: local, kubernetes, agents);
        None to resolve as usual when it has none and the override says USE_DEFAULT (1), else an error."""
        for plugin_id in plugin_ids:
            name = OVERRIDE_ALIASES.get(plugin_id, plugin_id)
            if name == "agents" and self.agents is not None:
                return self.agents
            if name in self.routed:
                return self._placed(name, task)
            if name == "local":
                found = self._by_type.get(task.type) or self.default
                if found is not None:
                    return found
        if behavior == USE_DEFAULT:
            return None
        have = ["local", *self.routed, *(["agents"] if self.agents is not None else [])]
        named = ", ".join(plugin_ids) or "no plugin"
        raise PluginNotFound(f"the plugin override of task type {task.type!r} names {named}, none of which this "
                             f"server runs (it has {', '.join(have)}); name one of those, or set "
                             "missing_plugin_behavior USE_DEFAULT")

    def _placed(self, name: str, task: tasks_pb2.TaskTemplate) -> Plugin:
        """The plugin of placement `name` for this task: the one for its type, else the placement's default."""
        found = self.routed[name]
        for plugin in found:
            if task.type in plugin.task_types:
                return plugin
        default = next((p for p in found if p.is_default), None)
        if default is None or not carries_container(task):
            types = sorted({t for p in found for t in p.task_types})
            raise PluginNotFound(f"the configuration sends task type {task.type!r} to {name}, which runs task "
                                 f"types {', '.join(types)} and tasks that carry a container")
        return default

    def setup(self, loop) -> None:
        for plugin in self.plugins:
            plugin.setup(loop)

    def close(self) -> None:
        for plugin in self.plugins:
            plugin.close()


def default_plugins(ctx) -> PluginRegistry:
    from flytelite.plugins.compute.dask import DaskProcess
    from flytelite.plugins.compute.mpi import MPIProcess
    from flytelite.plugins.compute.pytorch import PyTorchProcess
    from flytelite.plugins.compute.ray import RayProcess
    from flytelite.plugins.compute.spark import SparkProcess
    from flytelite.plugins.container import RawContainerProcess
    from flytelite.plugins.echo import EchoPlugin
    from flytelite.plugins.local.action import ActionProcess
    from flytelite.plugins.local.plugin import LocalProcessPlugin
    from flytelite.plugins.sleep import SleepPlugin

    routed: dict[str, list[Plugin]] = {}
    if ctx.config.uses_kubernetes:
        from flytelite.plugins.kubernetes.dask import DaskJobPlugin
        from flytelite.plugins.kubernetes.kubeflow import MPIJobPlugin, PyTorchJobPlugin
        from flytelite.plugins.kubernetes.plugin import KubernetesPlugin
        from flytelite.plugins.kubernetes.ray import RayJobPlugin
        from flytelite.plugins.kubernetes.spark import SparkDriverPlugin

        pods = KubernetesPlugin(ctx)
        routed["kubernetes"] = [pods, *(plugin(ctx, pods.api) for plugin in (
            SparkDriverPlugin, RayJobPlugin, DaskJobPlugin, PyTorchJobPlugin, MPIJobPlugin))]
    agents = None
    if ctx.config.agent_service.enabled:
        from flytelite.plugins.agents.plugin import AgentPlugin

        agents = AgentPlugin(ctx)
    local = LocalProcessPlugin(ctx)
    # All start processes on this machine: they share its task slots and the cleaner of their folders.
    others = [LocalProcessPlugin(ctx, process(ctx), shares_with=local) for process in (
        RawContainerProcess, SparkProcess, RayProcess, DaskProcess, PyTorchProcess, MPIProcess, ActionProcess)]
    return PluginRegistry([local, *others, EchoPlugin(), SleepPlugin()], routed, ctx.config.plugin_for, agents,
                          default=local)
