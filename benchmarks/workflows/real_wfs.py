"""Workflows of the real-task rows: flytekit python tasks run by a real flytelite server."""

from __future__ import annotations

from flytekit import map_task, task, workflow

CHAIN = 100


@task
def real_step(x: int) -> int:
    return x + 1


@workflow
def real_chain(x: int = 0) -> int:
    """CHAIN tasks, each waiting for the one before."""
    for _ in range(CHAIN):
        x = real_step(x=x)
    return x


@workflow
def real_map(xs: list[int]) -> list[int]:
    """One map task over the workflow's list."""
    return map_task(real_step)(x=xs)


@workflow
def real_map_unbounded(xs: list[int]) -> list[int]:
    """The same map with unbounded concurrency (flytekit: 0 means unbounded)."""
    return map_task(real_step, concurrency=0)(x=xs)
