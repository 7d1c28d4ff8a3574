"""Dynamic workflows end to end: a dynamic task that fans out a loop of tasks, and a dynamic task
that calls that dynamic task (dynamic inside dynamic)."""

from flytekit import dynamic, task, workflow


@task
def nd_square(n: int) -> int:
    return n * n


@task
def nd_total(xs: list[int]) -> int:
    return sum(xs)


@dynamic
def nd_fan(n: int) -> list[int]:
    return [nd_square(n=i) for i in range(n)]


@dynamic
def nd_outer(n: int) -> int:
    return nd_total(xs=nd_fan(n=n))


@workflow
def nested_dynamic_wf(n: int) -> int:
    return nd_total(xs=nd_fan(n=n))


@workflow
def nested_dyn_dyn_wf(n: int) -> int:
    return nd_outer(n=n)


@task
def nd_sleep(marker_dir: str, seconds: int) -> int:
    import os
    import time
    from pathlib import Path

    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, "pid").write_text(str(os.getpid()))
    time.sleep(seconds)
    return seconds


@dynamic
def nd_hold(marker_dir: str, seconds: int) -> int:
    return nd_sleep(marker_dir=marker_dir, seconds=seconds)


@workflow
def nested_dyn_hold_wf(marker_dir: str, seconds: int) -> int:
    return nd_hold(marker_dir=marker_dir, seconds=seconds)
