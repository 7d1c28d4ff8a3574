"""Arrays of a launch plan (flytekit's array_node) for the end-to-end tests: with concurrency, with tolerated
failures."""

from __future__ import annotations

import os
import time
from pathlib import Path

from flytekit import LaunchPlan, task, workflow
from flytekit.core.array_node import array_node


@task
def lp_item_square(x: int, offset: int, marker_dir: str) -> int:
    """Records when it ran (so the test can check how many children overlapped) and the array index it saw."""
    if x < 0:
        raise ValueError(f"negative input {x}")
    start = time.time()
    time.sleep(0.5)
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    (Path(marker_dir) / f"item-{os.environ.get('FLYTE_K8S_ARRAY_INDEX', 'none')}").write_text(f"{start} {time.time()}")
    return x * x + offset


@workflow
def lp_item_wf(x: int, marker_dir: str, offset: int = 0) -> int:
    return lp_item_square(x=x, offset=offset, marker_dir=marker_dir)


lp_item_plan = LaunchPlan.get_or_create(lp_item_wf, name="lp_item_plan", fixed_inputs={"offset": 100})


@workflow
def lp_map_wf(xs: list[int], marker_dirs: list[str]) -> list[int]:
    return array_node(lp_item_plan, concurrency=2)(x=xs, marker_dir=marker_dirs)


@workflow
def lp_map_tolerant_wf(xs: list[int], marker_dirs: list[str]) -> list[int | None]:
    return array_node(lp_item_plan, min_success_ratio=0.5)(x=xs, marker_dir=marker_dirs)
