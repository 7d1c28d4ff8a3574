"""The `agent_service:` block of flytelite's configuration: FlytePropeller's `agent-service` plugin config
(flyteplugins/go/tasks/plugins/webapi/agent/config.go), in snake case, plus the local agent servers.

Flyte's keys and theirs here: defaultAgent -> default_agent, agents -> agents, agentForTaskTypes ->
agent_for_task_types, supportedTaskTypes -> supported_task_types, pollInterval -> poll_interval_seconds,
webApi.caching.resyncInterval -> resync_seconds, webApi.caching.maxSystemFailures -> max_system_failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The RPCs a deployment's `timeouts` may name (Flyte's operation names).
OPERATIONS = ("CreateTask", "GetTask", "DeleteTask", "ExecuteTaskSync", "ListAgents")


@dataclass
class AgentDeployment:
    """Where an agent server listens (Flyte's agent Deployment)."""

    # The agent server's address (host:port).
    endpoint: str = ""
    # Plaintext gRPC; false: TLS, verified with the system's certificates.
    insecure: bool = True
    # Seconds an RPC may take unless `timeouts` names the operation (Flyte's defaultTimeout is 3 s; agents
    # started here share a loaded machine with the tasks, so flytelite waits longer). 0: no deadline.
    default_timeout_seconds: float = 10.0
    # Operation (one of OPERATIONS) -> seconds an RPC of it may take.
    timeouts: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.timeouts) - set(OPERATIONS)
        if unknown:
            raise ValueError(f"agent timeouts name unknown operations {sorted(unknown)}; they are "
                             f"{', '.join(OPERATIONS)}")

    def timeout(self, operation: str) -> float | None:
        """The deadline of one RPC (Flyte's getFinalTimeout); None for none."""
        seconds = self.timeouts.get(operation, self.default_timeout_seconds)
        return seconds or None

    @classmethod
    def of(cls, value: AgentDeployment | dict) -> AgentDeployment:
        return value if isinstance(value, AgentDeployment) else cls(**value)


@dataclass
class AgentServiceConfig:
    """Which agent runs a task type: agent_for_task_types (a name in `agents`), then what the configured
    deployments say they serve (ListAgents), then supported_task_types on default_agent, then the agent
    server flytelite starts in the task's environment (`pyflyte serve agent`, when `local_agents`)."""

    # The deployment that runs supported_task_types.
    default_agent: AgentDeployment = field(default_factory=AgentDeployment)
    # Named deployments, which agent_for_task_types names.
    agents: dict[str, AgentDeployment] = field(default_factory=dict)
    # Task type -> the name of the deployment in `agents` that runs it.
    agent_for_task_types: dict[str, str] = field(default_factory=dict)
    # Task types default_agent runs.
    supported_task_types: list[str] = field(default_factory=list)
    # Seconds between two ListAgents of the configured deployments (Flyte: pollInterval, 10 s).
    poll_interval_seconds: float = 10.0
    # Seconds between two GetTask of a running task (Flyte: the resource cache's resyncInterval, 30 s).
    resync_seconds: float = 1.0
    # Failed GetTask calls in a row after which the attempt fails (Flyte: maxSystemFailures, 5).
    max_system_failures: int = 5
    # Start `pyflyte serve agent` with the interpreter of a task's environment for task types that no other
    # plugin or configured agent runs.
    local_agents: bool = True
    # How long a local agent server may take to answer its first ListAgents.
    local_start_seconds: float = 120.0

    def __post_init__(self) -> None:
        self.default_agent = AgentDeployment.of(self.default_agent)
        self.agents = {name: AgentDeployment.of(d) for name, d in self.agents.items()}
        for task_type, name in self.agent_for_task_types.items():
            if name not in self.agents:
                raise ValueError(f"agent_service.agent_for_task_types sends {task_type!r} to agent {name!r}, which "
                                 f"agent_service.agents does not define (it defines {sorted(self.agents) or 'none'})")
        for name, deployment in self.agents.items():
            if not deployment.endpoint:
                raise ValueError(f"agent_service.agents[{name!r}] needs an endpoint (host:port)")
        if self.supported_task_types and not self.default_agent.endpoint:
            raise ValueError("agent_service.supported_task_types go to default_agent, which needs an endpoint")
        for key in ("poll_interval_seconds", "resync_seconds", "local_start_seconds"):
            if getattr(self, key) <= 0:
                raise ValueError(f"agent_service.{key} must be more than 0, not {getattr(self, key)}")
        if self.max_system_failures < 0:
            raise ValueError(f"agent_service.max_system_failures must be 0 or more, not {self.max_system_failures}")

    @property
    def deployments(self) -> list[AgentDeployment]:
        """The configured deployments, default first (Flyte lists them in that order)."""
        out = [self.default_agent] if self.default_agent.endpoint else []
        return out + list(self.agents.values())

    @property
    def enabled(self) -> bool:
        return self.local_agents or bool(self.deployments)
