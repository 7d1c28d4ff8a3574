"""The server's log lines as configured: JSON objects naming the execution, node and attempt a record was logged
for, and levels per component (here the node executor at debug, the rest at warning)."""

from __future__ import annotations

import json

import pytest
import yaml
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.config import Config
from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, finished, run_remote

pytestmark = pytest.mark.e2e


def test_json_log_lines_name_the_execution_node_and_attempt_at_the_configured_levels(tmp_path):
    config = {"logging": {"format": "json", "level": "warning",
                          "levels": {"flytelite.propeller.nodes.executor": "debug"}}}
    server = make_server(tmp_path, yaml.safe_dump(config))
    server.start()
    try:
        name = run_remote(server, copy_workflows(tmp_path / "wf", "hello.py"), "hello.py", "hello_wf")
        execution = finished(server, name)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    finally:
        server.stop()
    lines = [line for line in server.log_path.read_text().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    transitions = [r for r in records if r["logger"] == "flytelite.propeller.nodes.executor"
                   and r.get("execution") == f"flytesnacks/development/{name}"]
    assert [(r["node"], r["attempt"], r["message"]) for r in transitions if r["node"] == "n0"] == [
        ("n0", 0, "NOT_YET_STARTED -> QUEUED"), ("n0", 0, "QUEUED -> RUNNING"), ("n0", 0, "RUNNING -> SUCCEEDING"),
        ("n0", 0, "SUCCEEDING -> SUCCEEDED")]
    assert all(r["level"] == "DEBUG" and r["time"] for r in transitions)
    # Other components log at warning and above only: the engine's start (info) is not there.
    assert not [r for r in records if r["logger"] == "flytelite.propeller.engine" and r["level"] == "INFO"]


def test_bad_logging_settings_are_refused_naming_the_key(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text(yaml.safe_dump({"logging": {"format": "xml"}}))
    with pytest.raises(ValueError, match="logging.format must be one of text, json, not 'xml'"):
        Config.load(path)
    path.write_text(yaml.safe_dump({"logging": {"levels": {"flytelite.engine": "loud"}}}))
    with pytest.raises(ValueError, match=r"logging.levels\['flytelite.engine'\] must be debug, info"):
        Config.load(path)
