"""Launch plans called as nodes: a child execution per call, and one that holds until terminated."""

import os
import time
from pathlib import Path

from flytekit import LaunchPlan, task, workflow


@task
def child_square(x: int) -> int:
    return x * x


@task
def child_hold(marker_dir: str, seconds: float) -> int:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, "pid").write_text(str(os.getpid()))
    time.sleep(seconds)
    return 0


@workflow
def child_sub(x: int) -> int:
    return child_square(x=x)


child_sub_lp = LaunchPlan.get_or_create(child_sub, name="e2e_child_sub_lp")


@workflow
def child_parent(x: int) -> int:
    y = child_sub_lp(x=x)
    return child_square(x=y)


@workflow
def child_holding(marker_dir: str, seconds: float) -> int:
    return child_hold(marker_dir=marker_dir, seconds=seconds)


child_holding_lp = LaunchPlan.get_or_create(child_holding, name="e2e_child_holding_lp")


@workflow
def child_parent_holding(marker_dir: str, seconds: float) -> int:
    return child_holding_lp(marker_dir=marker_dir, seconds=seconds)
