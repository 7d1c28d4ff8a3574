"""The agent_service configuration and how an agent server's ListAgents answer is read (no server)."""

from __future__ import annotations

import pytest
import yaml
from flyteidl.admin import agent_pb2

from flytelite.config import Config
from flytelite.config.agents import AgentDeployment, AgentServiceConfig
from flytelite.plugins.agents.local import TaskTypeSupport


@pytest.mark.parametrize("value, message", [
    ({"agent_for_task_types": {"bigquery_query_job_task": "bq"}}, "which agent_service.agents does not define"),
    ({"agents": {"bq": {"insecure": True}}}, "agent_service.agents['bq'] needs an endpoint"),
    ({"supported_task_types": ["snowflake"]}, "default_agent, which needs an endpoint"),
    ({"resync_seconds": 0}, "agent_service.resync_seconds must be more than 0"),
    ({"max_system_failures": -1}, "max_system_failures must be 0 or more"),
    ({"default_agent": {"endpoint": "a:1", "timeouts": {"Create": 3}}}, "unknown operations ['Create']"),
])
def test_bad_configuration_is_refused_saying_why(tmp_path, value, message):
    path = tmp_path / "flytelite.yaml"
    path.write_text(yaml.safe_dump({"agent_service": value}))
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Config.load(path)


def test_configuration_from_yaml(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text("agent_service:\n  default_agent: {endpoint: 'agents:8000', timeouts: {GetTask: 2}}\n"
                    "  agents: {bq: {endpoint: 'bq:8000', insecure: false, default_timeout_seconds: 0}}\n"
                    "  agent_for_task_types: {bigquery_query_job_task: bq}\n")
    cfg = Config.load(path).agent_service
    assert cfg.default_agent.timeout("GetTask") == 2 and cfg.default_agent.timeout("CreateTask") == 10
    assert cfg.agents["bq"] == AgentDeployment(endpoint="bq:8000", insecure=False, default_timeout_seconds=0)
    assert cfg.agents["bq"].timeout("CreateTask") is None  # 0: no deadline
    assert [d.endpoint for d in cfg.deployments] == ["agents:8000", "bq:8000"]
    assert cfg.enabled and AgentServiceConfig(local_agents=False).enabled is False


def test_list_agents_answer_old_and_new_fields():
    support = TaskTypeSupport.of([
        agent_pb2.Agent(name="old", supported_task_types=["sensor"]),
        agent_pb2.Agent(name="new", is_sync=True, supported_task_categories=[agent_pb2.TaskCategory(name="chatgpt")]),
    ])
    assert support.agents == {"sensor": False, "chatgpt": True}
