"""The map-task benchmark's workflow: n items through a map task that does almost nothing.

The map task's concurrency is read from MAP_BENCH_CONCURRENCY when the workflow is serialized
(unset or 0: items share the execution's max parallelism).
"""

from __future__ import annotations

import os

from flytekit import map_task, task, workflow

CONCURRENCY = int(os.environ.get("MAP_BENCH_CONCURRENCY", "0")) or None


@task
def bench_items(n: int) -> list[int]:
    return list(range(n))


@task
def bench_item(x: int) -> int:
    return x + 1


@task
def bench_total(values: list[int]) -> int:
    return sum(values)


@workflow
def map_items_wf(n: int) -> int:
    return bench_total(values=map_task(bench_item, concurrency=CONCURRENCY)(x=bench_items(n=n)))
