"""A map task over a cached task: items are cached one by one (tests/e2e/test_cache.py)."""

import functools
import uuid
from pathlib import Path

from flytekit import map_task, task, workflow


@task(cache=True, cache_version="1", cache_ignore_input_vars=["marker_dir"])
def cache_map_item(x: int, marker_dir: str) -> str:
    token = uuid.uuid4().hex
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"{x}-{token}").touch()
    return f"{x * x}:{token}"


@workflow
def cache_map_wf(xs: list[int], marker_dir: str) -> list[str]:
    return map_task(functools.partial(cache_map_item, marker_dir=marker_dir))(x=xs)
