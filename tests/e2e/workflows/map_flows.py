"""Map tasks (ArrayNode) for the end-to-end tests: plain, partial, with concurrency, with tolerated failures."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from flytekit import map_task, task, workflow


def _index() -> int:
    return int(os.environ["FLYTE_K8S_ARRAY_INDEX"])


@task
def map_square(x: int) -> int:
    return x * x


@task
def map_scale(x: int, factor: int) -> int:
    return x * factor


@task
def map_timed(x: int, marker_dir: str) -> str:
    """Records when it ran, so the test can check how many items overlapped."""
    start = time.time()
    time.sleep(1.0)
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    (Path(marker_dir) / f"item-{_index()}").write_text(f"{start} {time.time()}")
    return f"{x}@{_index()}"


@task
def map_total(values: list[int]) -> int:
    return sum(values)


@task
def map_checked(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative input {x} at index {_index()}")
    return x + 100


@workflow
def map_plain_wf(xs: list[int], factor: int, marker_dir: str) -> tuple[list[int], int, list[int], list[str]]:
    squares = map_task(map_square)(x=xs)
    scaled = map_task(functools.partial(map_scale, factor=factor))(x=xs)
    timed = map_task(functools.partial(map_timed, marker_dir=marker_dir), concurrency=2)(x=xs)
    return squares, map_total(values=squares), scaled, timed


@workflow
def map_tolerant_wf(xs: list[int]) -> list[int | None]:
    return map_task(map_checked, min_success_ratio=0.5)(x=xs)


@workflow
def map_strict_wf(xs: list[int]) -> list[int]:
    return map_task(map_checked)(x=xs)


@task
def map_slow_item(x: int, marker_dir: str) -> int:
    """Leaves a file per run (so the restart test can count runs), then sleeps x seconds."""
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"item-{_index()}-{os.getpid()}").touch()
    time.sleep(x)
    return x * 10


@workflow
def map_restart_wf(xs: list[int], marker_dir: str) -> list[int]:
    return map_task(functools.partial(map_slow_item, marker_dir=marker_dir), concurrency=2)(x=xs)
