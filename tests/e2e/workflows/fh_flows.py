"""Failure handling end to end: on_failure, failure policy, timeouts, retries, max parallelism."""

import json
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

from flytekit import LaunchPlan, WorkflowFailurePolicy, task, workflow
from flytekit.exceptions.user import FlyteRecoverableException
from flytekit.types.error import FlyteError


def _mark(marker_dir: str, name: str, data=None) -> None:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, name).write_text(json.dumps(data if data is not None else {}))


# -- on_failure -------------------------------------------------------------------------------
@task
def fh_refuse(x: int, marker_dir: str) -> int:
    if x != 42:
        raise ValueError(f"fh_refuse will not take {x}")
    return x


@task
def fh_cleanup(x: int, marker_dir: str, err: FlyteError | None = None) -> None:
    _mark(marker_dir, "cleanup.json", {"x": x, "message": err.message if err else None,
                                       "failed_node_id": err.failed_node_id if err else None})


@workflow(on_failure=fh_cleanup)
def fh_on_failure_wf(x: int, marker_dir: str) -> int:
    return fh_refuse(x=x, marker_dir=marker_dir)


# -- a subworkflow's own on_failure, then the parent's (flytesnacks' failure_node.py example) ------
@task
def fh_create_cluster(name: str, marker_dir: str) -> None:
    _mark(marker_dir, f"created-{name}")


@task
def fh_cluster_job(a: int, b: str) -> None:
    raise ValueError(f"fh_cluster_job failed on {a} {b}")


@task
def fh_delete_cluster(name: str, marker_dir: str) -> None:
    _mark(marker_dir, f"deleted-{name}")


@task
def fh_clean_up(name: str, marker_dir: str, err: FlyteError | None = None) -> None:
    _mark(marker_dir, f"cleanup-{name}.json", {"at": time.time(), "message": err.message if err else None,
                                               "failed_node_id": err.failed_node_id if err else None})


@workflow(on_failure=fh_clean_up)
def fh_cluster_subwf(name: str, marker_dir: str) -> None:
    c = fh_create_cluster(name=name, marker_dir=marker_dir)
    t = fh_cluster_job(a=1, b="sub")
    d = fh_delete_cluster(name=name, marker_dir=marker_dir)
    c >> t >> d


@workflow(on_failure=fh_clean_up, failure_policy=WorkflowFailurePolicy.FAIL_AFTER_EXECUTABLE_NODES_COMPLETE)
def fh_cluster_wf(marker_dir: str, name: str = "my_cluster") -> None:
    c = fh_create_cluster(name=name, marker_dir=marker_dir)
    fh_cluster_subwf(name="another_cluster", marker_dir=marker_dir)
    t = fh_cluster_job(a=1, b="parent")
    d = fh_delete_cluster(name=name, marker_dir=marker_dir)
    c >> t >> d


# -- FAIL_AFTER_EXECUTABLE_NODES_COMPLETE -----------------------------------------------------
@task
def fh_fail_fast(marker_dir: str) -> int:
    if marker_dir:
        raise ValueError("fh_fail_fast failed first")
    return 0


@task
def fh_slow_ok(seconds: float, marker_dir: str) -> int:
    time.sleep(seconds)
    _mark(marker_dir, "slow-done", {"at": time.time()})
    return 1


@task
def fh_after_slow(n: int, marker_dir: str) -> int:
    _mark(marker_dir, "after-slow-done", {"at": time.time()})
    return n + 1


@workflow(failure_policy=WorkflowFailurePolicy.FAIL_AFTER_EXECUTABLE_NODES_COMPLETE)
def fh_keep_going_wf(marker_dir: str, seconds: float = 2.0) -> int:
    fh_fail_fast(marker_dir=marker_dir)
    return fh_after_slow(n=fh_slow_ok(seconds=seconds, marker_dir=marker_dir), marker_dir=marker_dir)


# -- timeouts ---------------------------------------------------------------------------------
@task(timeout=timedelta(seconds=3))
def fh_overstays(marker_dir: str) -> int:
    _mark(marker_dir, "overstays.pid", os.getpid())
    time.sleep(120)
    return 120


@workflow
def fh_task_timeout_wf(marker_dir: str) -> int:
    return fh_overstays(marker_dir=marker_dir)


@task
def fh_sleeps(seconds: int, marker_dir: str) -> int:
    _mark(marker_dir, "sleeps.pid", os.getpid())
    time.sleep(seconds)
    return seconds


@workflow
def fh_node_timeout_wf(marker_dir: str) -> int:
    return fh_sleeps(seconds=120, marker_dir=marker_dir).with_overrides(timeout=timedelta(seconds=3))


# -- user and system retries ------------------------------------------------------------------
@task(retries=1, interruptible=True)
def fh_killed_then_flaky(marker_dir: str) -> int:
    """Attempt 0 is killed (a system error), attempt 1 fails recoverably (a user error), attempt 2 succeeds."""
    attempt = int(os.environ["FLYTE_ATTEMPT_NUMBER"])
    _mark(marker_dir, f"attempt-{attempt}")
    if attempt == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    if attempt == 1:
        raise FlyteRecoverableException("recoverable failure on attempt 1")
    return attempt


@workflow
def fh_retries_wf(marker_dir: str) -> int:
    return fh_killed_then_flaky(marker_dir=marker_dir)


# -- max parallelism --------------------------------------------------------------------------
@task
def fh_busy(i: int, marker_dir: str) -> int:
    start = time.time()
    time.sleep(1.0)
    _mark(marker_dir, f"busy-{i}.json", {"start": start, "end": time.time()})
    return i


@workflow
def fh_fan_out_wf(marker_dir: str) -> list[int]:
    return [fh_busy(i=i, marker_dir=marker_dir) for i in range(6)]


fh_fan_out_capped = LaunchPlan.get_or_create(fh_fan_out_wf, name="fh_fan_out_capped", max_parallelism=2)
