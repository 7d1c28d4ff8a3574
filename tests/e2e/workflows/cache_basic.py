"""A cached task that leaves a marker file each time it really runs (tests/e2e/test_cache.py).

The output carries a token unique to the computation, so a cache hit returns the token of the run
that computed it; marker_dir is ignored by the cache key, so each run can count its own markers.
"""

import uuid
from pathlib import Path

from flytekit import task, workflow


@task(cache=True, cache_version="1", cache_ignore_input_vars=["marker_dir"])
def cache_square(x: int, marker_dir: str) -> str:
    token = uuid.uuid4().hex
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, token).touch()
    return f"{x * x}:{token}"


@workflow
def cache_basic_wf(x: int, marker_dir: str) -> str:
    return cache_square(x=x, marker_dir=marker_dir)
