"""A chain whose middle task is slow, for the SIGKILL-and-restart test; every task run leaves a file."""

import os
import time
from pathlib import Path

from flytekit import task, workflow


def _mark(marker_dir: str, name: str) -> None:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"{name}-{os.getpid()}").touch()


@task
def first(marker_dir: str) -> int:
    _mark(marker_dir, "first")
    return 1


@task
def slow(marker_dir: str, x: int, seconds: int) -> int:
    _mark(marker_dir, "slow")
    time.sleep(seconds)
    return x + 1


@task
def last(marker_dir: str, x: int) -> int:
    _mark(marker_dir, "last")
    return x * 10


@workflow
def restart_wf(marker_dir: str, seconds: int = 8) -> int:
    a = first(marker_dir=marker_dir)
    b = slow(marker_dir=marker_dir, x=a, seconds=seconds)
    return last(marker_dir=marker_dir, x=b)
