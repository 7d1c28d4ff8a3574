"""What a pod's status means for its attempt (plugins/kubernetes/phases.py), as FlytePropeller's pod helper."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from flytelite.plugins.kubernetes.phases import SYSTEM, USER, pod_state

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _pod(phase, containers=(), conditions=(), reason="", **status):
    return {"metadata": {}, "status": {"phase": phase, "containerStatuses": list(containers),
                                       "conditions": list(conditions), "reason": reason, **status}}


def _waiting(reason, message=""):
    return {"name": "primary", "ready": False, "state": {"waiting": {"reason": reason, "message": message}}}


def _terminated(code, reason="", name="primary"):
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}}


def _not_ready(since=NOW):
    return {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
            "lastTransitionTime": since.isoformat().replace("+00:00", "Z")}


def state(pod, grace=180.0):
    return pod_state(pod, "primary", NOW, grace)


def test_pending_pods_wait_and_bad_images_fail_as_in_flyte():
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no cpu"}
    assert state(_pod("Pending", conditions=[unschedulable])).phase == "queued"
    assert state(_pod("Pending", [_waiting("ContainerCreating")], [_not_ready()])).phase == "initializing"
    backoff = _pod("Pending", [_waiting("ImagePullBackOff")], [_not_ready(NOW - timedelta(seconds=10))])
    assert state(backoff).phase == "initializing"
    late = state(backoff, grace=5)
    assert (late.phase, late.kind, late.retryable) == ("failed", USER, True) and "Grace period" in late.reason
    invalid = state(_pod("Pending", [_waiting("InvalidImageName")], [_not_ready()]))
    assert (invalid.phase, invalid.retryable) == ("failed", False)
    never = state(_pod("Pending", [_waiting("ErrImageNeverPull", "image not present")], [_not_ready()]))
    assert (never.phase, never.kind, never.code) == ("failed", SYSTEM, "ContainersNotReady|ErrImageNeverPull")


def test_running_and_succeeded():
    assert state(_pod("Running", [{"name": "primary", "state": {"running": {}}}])).phase == "running"
    assert state(_pod("Succeeded", [_terminated(0, "Completed")])).phase == "succeeded"
    oom = state(_pod("Succeeded", [_terminated(0, "OOMKilled")]))
    assert (oom.phase, oom.code, oom.kind) == ("failed", "OOMKilled", USER)


@pytest.mark.parametrize("container, reason, code, kind", [
    (_terminated(137, "OOMKilled"), "", "OOMKilled", USER),
    (_terminated(137, "Error"), "", "Interrupted", SYSTEM),  # SIGKILL of the primary container
    (_terminated(2, "Error"), "Evicted", "Evicted", USER),
    (_terminated(1, "Error"), "", "Interrupted", SYSTEM),  # no reason at all: Flyte counts it a system error
    (_terminated(0, "Completed"), "Shutdown", "Interrupted", SYSTEM),
])
def test_failed_pods_are_classified_as_flytepropeller_does(container, reason, code, kind):
    got = state(_pod("Failed", [container], reason=reason))
    assert (got.phase, got.code, got.kind, got.retryable) == ("failed", code, kind, True)


def test_a_primary_that_ended_while_the_pod_still_runs():
    user = state(_pod("Running", [_terminated(3, "Error"), {"name": "sidecar", "state": {"running": {}}}]))
    assert (user.phase, user.code, user.kind) == ("failed", "Error", USER)
    killed = state(_pod("Running", [_terminated(137, "Error")]))
    assert (killed.phase, killed.kind) == ("failed", SYSTEM)
    assert state(_pod("Running", [_terminated(0, "Completed")])).phase == "succeeded"


def test_a_raw_container_waits_for_its_uploader_before_it_is_done():
    uploading = _pod("Running", [{"name": "sidecar", "state": {"running": {}}}, _terminated(0, "Completed")])
    assert pod_state(uploading, "primary", NOW, 180.0, whole_pod=True).phase == "running"
    assert pod_state(_pod("Succeeded", [_terminated(0, "Completed")]), "primary", NOW, 180.0,
                     whole_pod=True).phase == "succeeded"


def test_a_pod_deleted_before_it_finished_is_a_system_error():
    pod = _pod("Running", [{"name": "primary", "state": {"running": {}}}])
    pod["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    got = state(pod)
    assert (got.phase, got.code, got.kind) == ("failed", "UnexpectedObjectDeletion", SYSTEM)
