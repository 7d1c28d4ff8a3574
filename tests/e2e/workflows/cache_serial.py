"""A slow cache-serialized task: concurrent executions with the same inputs must compute it once."""

import time
import uuid
from pathlib import Path

from flytekit import task, workflow


@task(cache=True, cache_version="1", cache_serialize=True, cache_ignore_input_vars=["marker_dir"])
def cache_slow_square(x: int, marker_dir: str) -> str:
    token = uuid.uuid4().hex
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, token).touch()
    time.sleep(4)
    return f"{x * x}:{token}"


@workflow
def cache_serial_wf(x: int, marker_dir: str) -> str:
    return cache_slow_square(x=x, marker_dir=marker_dir)
