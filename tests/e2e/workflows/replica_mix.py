"""Workflows of every kind for the replica fault test (chains, a map task, a dynamic workflow, a
serialized cache, a gate, a schedule). Every task run leaves a file when it starts and another when it
ends, named after its tag and its pid: a task that ended twice would leave two "done" files."""

import functools
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

from flytekit import LaunchPlan, dynamic, map_task, task, wait_for_input, workflow
from flytekit.models.schedule import Schedule


def _mark(marker_dir: str, what: str, tag: str) -> None:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"{what}-{tag}-{os.getpid()}").touch()


@task
def mix_step(marker_dir: str, tag: str, x: int, seconds: float) -> int:
    _mark(marker_dir, "start", tag)
    time.sleep(seconds)
    _mark(marker_dir, "done", tag)
    return x + 1


@workflow
def mix_chain(marker_dir: str, seconds: float = 0.5) -> int:
    a = mix_step(marker_dir=marker_dir, tag="c0", x=0, seconds=seconds)
    b = mix_step(marker_dir=marker_dir, tag="c1", x=a, seconds=seconds)
    c = mix_step(marker_dir=marker_dir, tag="c2", x=b, seconds=seconds)
    return mix_step(marker_dir=marker_dir, tag="c3", x=c, seconds=seconds)


@task
def mix_item(x: int, marker_dir: str) -> int:
    _mark(marker_dir, "start", f"m{x}")
    time.sleep(0.3)
    _mark(marker_dir, "done", f"m{x}")
    return x * x


@workflow
def mix_map(marker_dir: str, xs: list[int]) -> list[int]:
    return map_task(functools.partial(mix_item, marker_dir=marker_dir), concurrency=2)(x=xs)


@dynamic
def mix_fan(marker_dir: str, n: int) -> list[int]:
    return [mix_step(marker_dir=marker_dir, tag=f"d{i}", x=i, seconds=0.3) for i in range(n)]


@workflow
def mix_dynamic(marker_dir: str, n: int) -> list[int]:
    return mix_fan(marker_dir=marker_dir, n=n)


@task(cache=True, cache_version="1", cache_serialize=True, cache_ignore_input_vars=["marker_dir"])
def mix_cached(x: int, marker_dir: str) -> int:
    _mark(marker_dir, "start", f"cached{x}")
    time.sleep(1)
    _mark(marker_dir, "done", f"cached{x}")
    return x * 100


@workflow
def mix_cache(marker_dir: str, x: int) -> int:
    return mix_cached(x=x, marker_dir=marker_dir)


@workflow
def mix_gate(marker_dir: str) -> int:
    go = wait_for_input("go", timeout=timedelta(minutes=10), expected_type=int)
    return mix_step(marker_dir=marker_dir, tag="g", x=go, seconds=0.2)


@task
def mix_tick(when: datetime) -> str:
    return when.isoformat()


@workflow
def mix_scheduled(when: datetime) -> str:
    return mix_tick(when=when)


mix_every_3s = LaunchPlan.get_or_create(
    mix_scheduled, name="mix_every_3s", schedule=Schedule("when", cron_schedule=Schedule.CronSchedule("@every 3s", None)))
