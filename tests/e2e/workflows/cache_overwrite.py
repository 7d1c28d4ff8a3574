"""A cached task for the overwrite_cache and `flytelite cache list|clear` tests (tests/e2e/test_cache.py)."""

import uuid
from pathlib import Path

from flytekit import task, workflow


@task(cache=True, cache_version="1", cache_ignore_input_vars=["marker_dir"])
def cache_cube(x: int, marker_dir: str) -> str:
    token = uuid.uuid4().hex
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, token).touch()
    return f"{x * x * x}:{token}"


@workflow
def cache_overwrite_wf(x: int, marker_dir: str) -> str:
    return cache_cube(x=x, marker_dir=marker_dir)
