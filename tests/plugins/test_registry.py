"""Which plugin runs a task: the agents' configured types, then the configured routes, then the plugin of the
task's type, then agents, then the default plugin for a task that carries a container (FlytePropeller's
order), else a clear refusal."""

from __future__ import annotations

import pytest
from flyteidl.core import tasks_pb2

from flytelite.plugins.local.plugin import LocalProcessPlugin
from flytelite.plugins.machinery.core import Plugin
from flytelite.plugins.registry import PluginNotFound, PluginRegistry, default_plugins
from tests.propeller import harness as h

KEY = ("flytesnacks", "development", "x")


class Named(Plugin):
    def __init__(self, id: str, task_types: tuple[str, ...] = (), is_default: bool = False):
        self.id, self.task_types, self.is_default = id, task_types, is_default


class Router:
    def __init__(self, claimed: set[str]):
        self.claimed = claimed

    def claims(self, task_type: str) -> bool:
        return task_type in self.claimed


class Agents(Named):
    """The agent plugin's face to the registry: its router's configured claims, and the default it falls back to."""

    def __init__(self, claimed: set[str]):
        super().__init__("agent-service")
        self.router, self.default = Router(claimed), None


def task(task_type: str, container: bool = True) -> tasks_pb2.TaskTemplate:
    template = tasks_pb2.TaskTemplate(type=task_type)
    if container:
        template.container.args.extend(["pyflyte-execute", "--inputs", "{{.input}}"])
    return template


LOCAL = Named("local-process", ("python-task", "sidecar"), is_default=True)
SPARK = Named("spark", ("spark",))
KUBE = Named("container", ("python-task", "sidecar"), is_default=True)
KUBE_SPARK = Named("spark", ("spark",))


def registry(routes: dict[str, str] | None = None, agents: Agents | None = None) -> PluginRegistry:
    return PluginRegistry([LOCAL, SPARK], {"kubernetes": [KUBE, KUBE_SPARK]}, lambda t, p, d: (routes or {}).get(t, "local"),
                          agents, default=LOCAL)


def test_a_plugin_owns_its_task_type_ahead_of_the_agents():
    agents = Agents(set())
    assert registry(agents=agents).get(task("spark"), KEY) is SPARK
    assert agents.default is LOCAL


def test_the_configuration_routes_a_type_to_agents_or_to_kubernetes():
    agents = Agents({"bigquery_query_job_task"})
    r = registry({"spark": "agents", "duckdb": "kubernetes"}, agents)
    assert r.get(task("spark"), KEY) is agents
    assert r.get(task("bigquery_query_job_task", container=False), KEY) is agents
    # The pod plugin is the default: it runs any type whose task carries a container.
    assert r.get(task("duckdb"), KEY) is KUBE
    with pytest.raises(PluginNotFound, match="which runs task types python-task, sidecar, spark"):
        r.get(task("duckdb", container=False), KEY)


def test_a_type_routed_to_kubernetes_runs_on_the_plugin_there_for_that_type():
    r = registry({"spark": "kubernetes", "python-task": "kubernetes"})
    assert r.get(task("spark"), KEY) is KUBE_SPARK
    assert r.get(task("python-task"), KEY) is KUBE
    # Unrouted, spark stays on this machine's plugin.
    assert registry().get(task("spark"), KEY) is SPARK


def test_a_type_without_a_plugin_goes_to_the_agents_when_they_run_else_to_the_default_plugin():
    agents = Agents(set())
    assert registry(agents=agents).get(task("duckdb"), KEY) is agents
    assert registry().get(task("duckdb"), KEY) is LOCAL
    with pytest.raises(PluginNotFound, match="'duckdb' and the task carries no container"):
        registry().get(task("duckdb", container=False), KEY)


def test_routing_to_agents_without_the_agent_service_is_refused():
    with pytest.raises(PluginNotFound, match="agent service is off"):
        registry({"spark": "agents"}).get(task("spark"), KEY)


def test_an_executions_plugin_override_comes_first():
    agents = Agents(set())
    r = registry(agents=agents)
    assert r.get(task("python-task"), KEY, {"python-task": [["kubernetes"], 0]}) is KUBE
    assert r.get(task("spark"), KEY, {"spark": [["agent-service"], 0]}) is agents
    assert r.get(task("spark"), KEY, {"spark": [["gpu", "local"], 0]}) is SPARK
    # None of the plugins named: USE_DEFAULT resolves as usual, FAIL refuses naming them.
    assert r.get(task("spark"), KEY, {"spark": [["gpu"], 1]}) is SPARK
    with pytest.raises(PluginNotFound, match="names gpu, none of which this server runs"):
        r.get(task("spark"), KEY, {"spark": [["gpu"], 0]})


def test_the_plugins_that_start_processes_here_share_the_machines_task_slots_and_folder_cleaner(tmp_path):
    """One set of task slots and one cleaner thread for the machine; only the default plugin forks warm."""
    ctx = h.make_context(tmp_path)
    registry = default_plugins(ctx)
    try:
        local_ones = [p for p in registry.plugins if isinstance(p, LocalProcessPlugin)]
        assert len(local_ones) >= 7  # the default, raw containers, Spark, Ray, Dask, PyTorch, MPI
        assert len({id(p.slots) for p in local_ones}) == 1
        assert len({id(p.cleaner) for p in local_ones}) == 1
        assert [p.id for p in local_ones if p.warm is not None] == ["local-process"]
    finally:
        registry.close()
