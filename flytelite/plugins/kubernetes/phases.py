"""What a pod's status means for its attempt, as FlytePropeller's pod helper reads it.

`DemystifyPending`: waiting to be scheduled or for containers to be created is QUEUED or
INITIALIZING; `InvalidImageName` and `CreateContainerConfigError` (a missing secret, say) fail the
attempt at once, as the user's mistake; `ImagePullBackOff` fails it after a grace period, retryably;
any other reason a container cannot start (`ErrImageNeverPull`, `RunContainerError`,
`CrashLoopBackOff`) is a retryable system error at once. `DemystifySuccess`: a pod that succeeded
but whose container was OOMKilled failed. `DemystifyFailure`: OOMKilled and ordinary non-zero exits are
the user's (retryable); a SIGKILLed primary container (exit 137), a node shutting down and a pod that
failed without saying why are system errors ("Interrupted"), which spend the system retry budget.
Pods are dicts in the API's JSON shape (the informer's cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER

SIGKILL_EXIT_CODES = (137, 247)
SYSTEM_POD_REASONS = ("Shutdown", "Terminated", "NodeShutdown", "NodeAffinity")
STARTING = ("ErrImagePull", "ContainerCreating", "PodInitializing")


@dataclass(frozen=True)
class PodState:
    """queued, initializing, running, succeeded or failed; a failure's code, message, kind and retryability."""

    phase: str
    reason: str = ""
    code: str = ""
    kind: int = USER
    retryable: bool = True

    @property
    def done(self) -> bool:
        return self.phase in ("succeeded", "failed")


def _failed(code: str, message: str, kind: int = USER, retryable: bool = True) -> PodState:
    return PodState("failed", message, code, kind, retryable)


def pod_state(pod: dict, primary: str, now: datetime, image_pull_grace: float, whole_pod: bool = False) -> PodState:
    """The attempt's state from its pod's; a running pod is judged by its primary container unless the attempt
    waits for the `whole_pod` (a raw container's uploader reads its outputs after it ended)."""
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    if pod.get("metadata", {}).get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        return _failed("UnexpectedObjectDeletion", "the pod is being deleted before it finished", SYSTEM)
    if phase == "Succeeded":
        return _success(status)
    if phase == "Failed":
        return _failure(status, primary)
    if phase == "Pending":
        return _pending(status, now, image_pull_grace)
    return PodState("running") if whole_pod else _running(status, primary)


def _containers(status: dict) -> list[dict]:
    return (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])


def _success(status: dict) -> PodState:
    for c in _containers(status):
        terminated = (c.get("state") or {}).get("terminated") or {}
        if "OOMKilled" in (terminated.get("reason") or ""):
            return _failed("OOMKilled", "the pod reported success despite being OOMKilled")
    return PodState("succeeded")


def _pending(status: dict, now: datetime, grace: float) -> PodState:
    for condition in status.get("conditions") or []:
        if condition.get("status") != "False":
            continue
        if condition.get("type") == "PodScheduled":
            return PodState("queued", f"{condition.get('reason', '')}:{condition.get('message', '')}")
        if condition.get("type") != "Ready":
            continue
        for c in status.get("containerStatuses") or []:
            waiting = (c.get("state") or {}).get("waiting")
            if c.get("ready") or not waiting:
                continue
            reason = waiting.get("reason", "")
            code = f"{condition.get('reason', '')}|{reason}"
            message = f"{condition.get('message', '')}|{waiting.get('message', '')}"
            if reason in STARTING:
                return PodState("initializing", message)
            if reason in ("InvalidImageName", "CreateContainerConfigError"):
                return _failed(code, message, retryable=False)
            if reason == "ImagePullBackOff":
                since = _parse_time(condition.get("lastTransitionTime"))
                if since is not None and (now - since).total_seconds() > grace:
                    return _failed(code, f"Grace period [{grace:.0f}s] exceeded|{message}")
                return PodState("initializing", message)
            return _failed(code, message, SYSTEM)
    return PodState("queued", "Scheduling")


def _running(status: dict, primary: str) -> PodState:
    for c in status.get("containerStatuses") or []:
        if c.get("name") != primary:
            continue
        terminated = (c.get("state") or {}).get("terminated")
        if not terminated:
            return PodState("running")
        reason, code = terminated.get("reason") or "", terminated.get("exitCode", 0)
        message = _termination(c["name"], terminated)
        if "OOMKilled" in reason:
            return _failed(reason, message)
        if code in SIGKILL_EXIT_CODES:
            return _failed(reason or E.INTERRUPTED, message, SYSTEM)
        if code:
            return _failed(reason or "Error", message)
        return PodState("succeeded")
    return PodState("running")


def _failure(status: dict, primary: str) -> PodState:
    code = status.get("reason") or E.UNKNOWN_ERROR
    message = status.get("message") or "Pod failed. No message received from kubernetes."
    system = code in SYSTEM_POD_REASONS
    for c in _containers(status):
        terminated = (c.get("lastState") or {}).get("terminated") or (c.get("state") or {}).get("terminated")
        if not terminated:
            continue
        if "OOMKilled" in (terminated.get("reason") or ""):
            code = "OOMKilled"
        elif terminated.get("exitCode") in SIGKILL_EXIT_CODES:
            code = E.INTERRUPTED
            system = system or c.get("name") == primary
        message += _termination(c.get("name", ""), terminated)
    if code == E.UNKNOWN_ERROR or system:
        return _failed("Interrupted", message, SYSTEM)
    return _failed(code, message)


def _termination(name: str, terminated: dict) -> str:
    return (f"\r\n[{name}] terminated with exit code ({terminated.get('exitCode')}). "
            f"Reason [{terminated.get('reason', '')}]. Message: \n{terminated.get('message', '')}.")


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None
