"""A chain whose middle task is slow, for the SIGKILL tests; every task run leaves a file.

The slow task runs `seconds`, or, given `release` (a path), until the test creates that file (at most
`seconds`): a test that must act while it runs then does not race a fixed time.
"""

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
def slow(marker_dir: str, x: int, seconds: int, release: str) -> int:
    _mark(marker_dir, "slow")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (release and os.path.exists(release)):
        time.sleep(0.1)
    return x + 1


@task
def last(marker_dir: str, x: int) -> int:
    _mark(marker_dir, "last")
    return x * 10


@workflow
def restart_wf(marker_dir: str, seconds: int = 8, release: str = "") -> int:
    a = first(marker_dir=marker_dir)
    b = slow(marker_dir=marker_dir, x=a, seconds=seconds, release=release)
    return last(marker_dir=marker_dir, x=b)
