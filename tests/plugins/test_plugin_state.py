"""Plugin states (PluginState subclasses) over the dict the engine persists: the same keys as the plugins
wrote before they had types, statuses as their values, and a field back at its default leaves no key."""

from __future__ import annotations

import json

from flytelite.plugins.agents.plugin import AgentState, AgentStatus
from flytelite.plugins.kubernetes.plugin import PodState, PodStatus
from flytelite.plugins.local.state import AttemptState, AttemptStatus


def test_a_pod_state_written_before_types_loads_and_is_written_back_unchanged():
    persisted = {"status": "done", "namespace": "flytesnacks-development", "pod": "abc-n0-0",
                 "primary": "abc-n0-0", "output_prefix": "s3://b/metadata/n0/data/0", "whole_pod": True,
                 "failure": ["TaskAborted", "aborted", "USER", False], "deleted": True}
    state = PodState.load(persisted)
    assert state.status is PodStatus.DONE and state.key == ("flytesnacks-development", "abc-n0-0")
    written: dict = {}
    state.store(written)
    assert written == persisted and json.loads(json.dumps(written)) == persisted


def test_an_agent_states_failure_count_back_at_zero_leaves_no_key():
    data = {"status": "created", "resource_meta": "bWV0YQ==", "output_prefix": "/out",
            "task_category": ["sensor", 0], "sync_failures": 2, "last_version": 3}
    state = AgentState.load(data)
    assert state.status is AgentStatus.CREATED and state.sync_failures == 2
    state.sync_failures = 0
    state.status = AgentStatus.DONE
    state.store(data)
    assert "sync_failures" not in data and data["status"] == "done" and data["last_version"] == 3
    assert AgentState.load(data).sync_failures == 0


def test_attempt_state_persists_under_the_same_keys():
    # The engine persists the plugin state as a JSON dict: a state written before AttemptState (or by it)
    # loads into typed fields and is written back unchanged, with unset fields left out.
    persisted = {"status": "running", "marker": "p-d-x/n0/0", "machine": "m1", "output_prefix": "/out",
                 "log_path": "/logs/n0-0.log", "work_dir": "/work/n0/0", "pid": 12, "start_time": 34,
                 "adopted": True, "exit_code": 0}
    state = AttemptState.load(persisted)
    assert state.status is AttemptStatus.RUNNING and state.pid == 12 and state.exit_code == 0
    written: dict = {}
    state.store(written)
    assert written == persisted and json.loads(json.dumps(written)) == persisted
    fresh: dict = {}
    AttemptState(status=AttemptStatus.LAUNCHING, marker="m").store(fresh)
    assert fresh == {"status": "launching", "marker": "m"}
