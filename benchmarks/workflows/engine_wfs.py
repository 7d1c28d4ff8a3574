"""Workflows of the engine-only rows (tasks answered by the no-op plugin, so their bodies never run here;
flytekit's local execution runs them for the baselines)."""

from __future__ import annotations

from flytekit import map_task, task, workflow

WIDE = 1000
CHAIN = 1000


@task
def noop_step(x: int) -> int:
    return x + 1


@workflow
def wide_wf(x: int = 0) -> None:
    """WIDE independent nodes: the engine's throughput of node transitions."""
    for _ in range(WIDE):
        noop_step(x=x)


@workflow
def chain_wf(x: int = 0) -> int:
    """CHAIN nodes, each waiting for the one before."""
    for _ in range(CHAIN):
        x = noop_step(x=x)
    return x


@workflow
def map_wf(xs: list[int]) -> list[int]:
    """One map task over the workflow's list."""
    return map_task(noop_step)(x=xs)


@workflow
def three_wf(x: int = 0) -> int:
    """Three nodes in a row: many small executions at once."""
    return noop_step(x=noop_step(x=noop_step(x=x)))
