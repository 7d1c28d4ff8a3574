"""core-sleep leaves (the stand-in flytekit plugin beside this file in the test's folder)."""

from datetime import timedelta

from flytekit import dynamic, task, workflow
from flytekitplugins.sleep import Sleep


@task(task_config=Sleep())
def nap(duration: timedelta) -> None:
    pass


@task(task_config=Sleep())
def bad_nap(seconds: int) -> None:
    pass


@dynamic
def naps(n: int, seconds: int) -> int:
    for _ in range(n):
        nap(duration=timedelta(seconds=seconds))
    return n


@workflow
def naps_wf(n: int = 20, seconds: int = 2) -> int:
    return naps(n=n, seconds=seconds)


@workflow
def bad_nap_wf() -> None:
    bad_nap(seconds=1)


@workflow
def many_naps_wf(n: int = 20000) -> int:
    return naps(n=n, seconds=0)
