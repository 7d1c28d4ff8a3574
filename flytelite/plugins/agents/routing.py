"""Which agent runs a task type (FlytePropeller's agent registry: getAgentRegistry and getFinalAgent).

In order: `agent_for_task_types` (an async agent of `agents`), what the configured deployments answer to
ListAgents (refreshed every `poll_interval_seconds` in the background), `supported_task_types` on
`default_agent`, then the agent server flytelite runs in the task's environment (what it serves is learnt
from its ListAgents), and last `default_agent` for any other type, as in Flyte. Task type versions are
not told apart: a type's name picks its agent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from flyteidl.core import tasks_pb2

from flytelite.config.agents import AgentDeployment, AgentServiceConfig
from flytelite.plugins.agents.client import AgentCallFailed, AgentClients
from flytelite.plugins.agents.local import LocalAgentServers, TaskTypeSupport

log = logging.getLogger(__name__)
# How long a round waits for the first ListAgents of the configured deployments.
FIRST_LIST_SECONDS = 10.0


class NotServed(LookupError):
    pass


@dataclass(frozen=True)
class AgentRoute:
    deployment: AgentDeployment
    is_sync: bool
    # The local agent server's log file, when the agent runs in one flytelite started.
    log_path: str = ""


class AgentRouter:
    def __init__(self, cfg: AgentServiceConfig, clients: AgentClients, local: LocalAgentServers | None,
                 interpreter_for: Callable[[str], str]):
        self.cfg = cfg
        self.clients = clients
        self.local = local
        self.interpreter_for = interpreter_for
        self._listed: dict[str, tuple[AgentDeployment, bool]] = {}
        self._first_list = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.cfg.deployments:
            self._first_list.set()
            return
        self._thread = threading.Thread(target=self._watch, daemon=True, name="agent-registry")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def claims(self, task_type: str) -> bool:
        """Whether the configuration itself sends this task type to an agent (ahead of built-in plugins)."""
        return task_type in self.cfg.agent_for_task_types or task_type in self.cfg.supported_task_types

    def route(self, task: tasks_pb2.TaskTemplate, wake: Callable[[float | None], None]) -> AgentRoute | None:
        """The agent for this task; None while the local agent server it needs starts (`wake` is called
        when it is up). Raises NotServed, or AgentServerFailed when that server could not start."""
        task_type = task.type
        name = self.cfg.agent_for_task_types.get(task_type)
        if name is not None:
            return AgentRoute(self.cfg.agents[name], False)
        if self.cfg.deployments:
            self._first_list.wait(FIRST_LIST_SECONDS)
            listed = self._listed.get(task_type)
            if listed is not None:
                return AgentRoute(*listed)
        if task_type in self.cfg.supported_task_types:
            return AgentRoute(self.cfg.default_agent, False)
        served: list[str] = []
        interpreter = self.interpreter_for(task.container.image if task.HasField("container") else "")
        if self.local is not None:
            server = self.local.lookup(interpreter, wake)
            if server is None:
                return None
            support, deployment = server.support, server.deployment
            assert support is not None and deployment is not None, "lookup() answers a running server"
            if task_type in support.agents:
                return AgentRoute(deployment, support.agents[task_type], str(server.log_path))
            served = sorted(support.agents)
        if self.cfg.default_agent.endpoint:
            return AgentRoute(self.cfg.default_agent, False)
        where = (f"the agent server `pyflyte serve agent` in the task's environment ({interpreter}) serves "
                 f"{', '.join(served) or 'none'}; install the package that provides an agent for it into that "
                 "environment and restart flytelite, or configure agent_service" if self.local is not None else
                 "no agent is configured for it (agent_service)")
        raise NotServed(f"no plugin or agent runs tasks of type {task_type!r}: {where}")

    def route_blocking(self, task: tasks_pb2.TaskTemplate, seconds: float) -> AgentRoute:
        """route(), waiting at most `seconds` for a local agent server to start (abort must reach the agent)."""
        up = threading.Event()
        route = self.route(task, lambda _delay: up.set())
        if route is None:
            up.wait(seconds)
            route = self.route(task, lambda _delay: None)
        if route is None:
            raise NotServed(f"the agent server for tasks of type {task.type!r} did not start within {seconds:.0f} s")
        return route

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._listed = self._list()
            self._first_list.set()
            self._stop.wait(self.cfg.poll_interval_seconds)

    def _list(self) -> dict[str, tuple[AgentDeployment, bool]]:
        out: dict[str, tuple[AgentDeployment, bool]] = {}
        for deployment in self.cfg.deployments:
            try:
                agents = self.clients.get(deployment).list_agents()
            except AgentCallFailed as e:
                log.warning("%s", e)
                continue
            for task_type, is_sync in TaskTypeSupport.of(agents).agents.items():
                out[task_type] = (deployment, is_sync)
        return out
