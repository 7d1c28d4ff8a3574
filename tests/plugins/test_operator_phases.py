"""How the operators' job statuses map to an attempt's phase on Kubernetes, as flyteplugins maps them (the
objects themselves are checked against the operators' resource definitions in tests/compute/test_on_kubernetes)."""

from __future__ import annotations

import pytest

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.kubernetes.dask import DaskJobPlugin
from flytelite.plugins.kubernetes.ray import RayJobPlugin
from flytelite.plugins.kubernetes.resource import condition_phase, overlay


def ray(deployment: str, **status) -> tuple:
    state = RayJobPlugin.phase(None, {"metadata": {"name": "job"},  # type: ignore[arg-type]
                                      "status": {"jobDeploymentStatus": deployment, **status}})
    return state.phase, state.reason, state.code, state.kind, state.retryable


@pytest.mark.parametrize("deployment, phase, reason", [
    ("", "queued", "Scheduling"), ("Initializing", "initializing", "cluster is creating"),
    ("Running", "running", ""), ("Complete", "succeeded", ""), ("Suspended", "queued", "Suspended"),
])
def test_ray_job_deployment_status(deployment, phase, reason):
    assert ray(deployment)[:2] == (phase, reason)


def test_a_failed_ray_job_is_a_retryable_system_error_and_an_unknown_status_is_refused():
    assert ray("Failed", reason="AppFailed", message="boom") == (
        "failed", "Failed to run Ray job job with error: [AppFailed] boom", E.TASK_FAILED_WITH_ERROR, SYSTEM, True)
    assert ray("Exploded")[:2] == ("failed", "unknown job deployment status: Exploded")


@pytest.mark.parametrize("status, phase", [
    ("", "initializing"), ("JobCreated", "initializing"), ("ClusterCreated", "initializing"),
    ("Running", "running"), ("Successful", "succeeded"), ("Failed", "failed"),
])
def test_dask_job_status(status, phase):
    state = DaskJobPlugin.phase(None, {"status": {"jobStatus": status}})  # type: ignore[arg-type]
    assert state.phase == phase
    if phase == "failed":
        assert (state.reason, state.code, state.kind, state.retryable) == (
            "Dask Job failed", E.DOWNSTREAM_SYSTEM_ERROR, SYSTEM, True)


def _condition(kind: str, status: str, when: str) -> dict:
    return {"type": kind, "status": status, "lastTransitionTime": when, "reason": "R", "message": "M"}


def test_a_kubeflow_job_is_in_its_newest_true_condition():
    assert condition_phase([], "t").phase == "queued"
    running = [_condition("Created", "True", "2026-01-01T00:00:00Z"), _condition("Running", "True", "2026-01-01T00:01:00Z")]
    assert condition_phase(running, "t").phase == "running"
    failed = running + [_condition("Failed", "True", "2026-01-01T00:02:00Z")]
    state = condition_phase(failed, "t")
    assert (state.phase, state.reason, state.kind, state.retryable) == ("failed", "Job failed:\n\tR - M", SYSTEM, True)
    assert condition_phase(running + [_condition("Succeeded", "True", "2026-01-01T00:03:00Z")], "t").phase == \
        "succeeded"
    # No true condition at all: flyteplugins cannot tell the phase.
    assert condition_phase([_condition("Running", "False", "2026-01-01T00:00:00Z")], "t").phase == "failed"


def test_a_groups_own_pod_spec_goes_over_the_attempts():
    spec = {"containers": [{"name": "ray-head", "image": "a", "env": [{"name": "X", "value": "1"}]}],
            "nodeSelector": {"a": "1"}}
    over = {"containers": [{"name": "ray-head", "image": "b"}, {"name": "side", "image": "c"}],
            "nodeSelector": {"b": "2"}, "priorityClassName": "high"}
    assert overlay(spec, over) == {
        "containers": [{"name": "ray-head", "image": "b", "env": [{"name": "X", "value": "1"}]},
                       {"name": "side", "image": "c"}],
        "nodeSelector": {"a": "1", "b": "2"}, "priorityClassName": "high"}
