"""Workflows of the Kubernetes rows: the same python task as a chain and as a map task."""

from __future__ import annotations

from flytekit import map_task, task, workflow

POD_CHAIN = 10


@task
def pod_step(x: int) -> int:
    return x + 1


@workflow
def pod_chain(x: int = 0) -> int:
    """POD_CHAIN tasks, each waiting for the one before."""
    for _ in range(POD_CHAIN):
        x = pod_step(x=x)
    return x


@workflow
def pod_map(xs: list[int]) -> list[int]:
    return map_task(pod_step)(x=xs)
