"""A dynamic workflow whose children are cached tasks, and a cached dynamic task (tests/e2e/test_cache.py)."""

import uuid
from pathlib import Path

from flytekit import dynamic, task, workflow


@task(cache=True, cache_version="1", cache_ignore_input_vars=["marker_dir"])
def cache_dyn_child(x: int, marker_dir: str) -> str:
    token = uuid.uuid4().hex
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"child-{x}-{token}").touch()
    return f"{x * x}:{token}"


@dynamic
def cache_dyn_fan(n: int, marker_dir: str) -> list[str]:
    return [cache_dyn_child(x=i, marker_dir=marker_dir) for i in range(n)]


@workflow
def cache_dynamic_wf(n: int, marker_dir: str) -> list[str]:
    return cache_dyn_fan(n=n, marker_dir=marker_dir)


@dynamic(cache=True, cache_version="1", cache_ignore_input_vars=["marker_dir"])
def cache_dyn_cached(n: int, marker_dir: str) -> list[str]:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"parent-{n}-{uuid.uuid4().hex}").touch()
    return [cache_dyn_child(x=i, marker_dir=marker_dir) for i in range(n)]


@workflow
def cache_dynamic_cached_wf(n: int, marker_dir: str) -> list[str]:
    return cache_dyn_cached(n=n, marker_dir=marker_dir)
