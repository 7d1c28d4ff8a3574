"""Workflows the browser tests drive: a slow fan-out with logs, a gate to approve, a map task, a failure, a wide
dynamic node."""

import time
from datetime import timedelta

from flytekit import CronSchedule, LaunchPlan, approve, dynamic, map_task, task, workflow


@task
def slow_step(seconds: int, label: str) -> str:
    for i in range(seconds):
        print(f"{label}: tick {i}", flush=True)
        time.sleep(1)
    print(f"{label}: done", flush=True)
    return f"{label}-{seconds}"


@task
def combine(a: str, b: str) -> str:
    return f"{a}+{b}"


@workflow
def fan_wf(seconds: int = 3, label: str = "step") -> str:
    a = slow_step(seconds=seconds, label=label)
    b = slow_step(seconds=1, label="quick")
    return combine(a=a, b=b)


@task
def inc(x: int) -> int:
    return x + 1


@workflow
def gate_wf(x: int = 1) -> int:
    y = inc(x=x)
    ok = approve(y, "go-ahead", timeout=timedelta(hours=1))
    return inc(x=ok)


@task
def square(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative input {x}")
    return x * x


@workflow
def map_wf(xs: list[int] = [1, 2, 3]) -> list[int]:  # noqa: B006 - flytekit reads defaults from the signature
    return map_task(square)(x=xs)


# Active once registered with --activate-launchplans; runs at 03:00 UTC only, so never during a test.
fan_nightly = LaunchPlan.get_or_create(workflow=fan_wf, name="fan_nightly", schedule=CronSchedule(schedule="0 3 * * *"))


@dynamic
def many(n: int) -> None:
    for i in range(n):
        inc(x=i)


@workflow
def wide_wf(n: int = 25) -> None:
    many(n=n)
