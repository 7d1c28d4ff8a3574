"""A map with unbounded concurrency (flytekit: concurrency=0) over many no-op items."""

from __future__ import annotations

from flytekit import map_task, task, workflow


@task
def numbers(n: int) -> list[int]:
    return list(range(n))


@task
def same(x: int) -> int:
    return x


@task
def total(values: list[int]) -> int:
    return sum(values)


@workflow
def unbounded_map_wf(n: int) -> int:
    return total(values=map_task(same, concurrency=0)(x=numbers(n=n)))
