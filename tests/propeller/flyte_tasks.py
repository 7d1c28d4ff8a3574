"""Real flytekit tasks and workflows the engine tests run as local processes (imported by the child too)."""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

from flytekit import task, workflow
from flytekit.exceptions.user import FlyteRecoverableException


def _attempt() -> int:
    return int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))


def _mark(marker_dir: str, name: str) -> None:
    if marker_dir:
        Path(marker_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(marker_dir) / name, "a") as f:
            f.write(f"{os.getpid()} {_attempt()}\n")


@task
def add(a: int, b: int) -> int:
    return a + b


@task
def square(x: int) -> int:
    return x * x


@workflow
def add_then_square(a: int, b: int) -> int:
    return square(x=add(a=a, b=b))


@task
def fail_user(x: int) -> int:
    if x >= 0:
        raise ValueError(f"x must be negative, got {x}")
    return x


@workflow
def failing_wf(x: int) -> int:
    return fail_user(x=x)


@task(retries=2)
def flaky(marker_dir: str) -> int:
    _mark(marker_dir, "flaky")
    if _attempt() < 2:
        raise FlyteRecoverableException(f"transient failure on attempt {_attempt()}")
    return _attempt()


@workflow
def flaky_wf(marker_dir: str) -> int:
    return flaky(marker_dir=marker_dir)


@task
def dies_once(marker_dir: str) -> int:
    _mark(marker_dir, "dies_once")
    if _attempt() == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return _attempt()


@workflow
def dies_once_wf(marker_dir: str) -> int:
    return dies_once(marker_dir=marker_dir)


@task
def error_file_cut_once(marker_dir: str, keep: int) -> int:
    """On its first attempt, leaves only the first `keep` bytes of its error document in error.pb and exits, as a
    task that ran out of disk while writing it does."""
    from flyteidl.core import errors_pb2

    _mark(marker_dir, "error_file_cut_once")
    if _attempt() == 0:
        prefix = sys.argv[sys.argv.index("--output-prefix") + 1].removeprefix("local://")
        doc = errors_pb2.ErrorDocument(error=errors_pb2.ContainerError(code="Never", message="never written whole"))
        os.makedirs(prefix, exist_ok=True)
        with open(os.path.join(prefix, "error.pb"), "wb") as f:
            f.write(doc.SerializeToString()[:keep])
        print("OSError: [Errno 28] No space left on device", flush=True)
        os._exit(1)
    return _attempt()


@workflow
def error_file_cut_once_wf(marker_dir: str, keep: int) -> int:
    return error_file_cut_once(marker_dir=marker_dir, keep=keep)


@task(timeout=timedelta(seconds=2))
def too_slow(marker_dir: str) -> int:
    _mark(marker_dir, "too_slow")
    time.sleep(60)
    return 1


@workflow
def too_slow_wf(marker_dir: str) -> int:
    return too_slow(marker_dir=marker_dir)


@task
def record(marker_dir: str, name: str, x: int) -> int:
    _mark(marker_dir, name)
    return x + 1


@task
def sleep_then(marker_dir: str, seconds: float, x: int) -> int:
    _mark(marker_dir, "sleep_then")
    if _attempt() == 0:  # a retry (after a lost process) finishes at once
        time.sleep(seconds)
    return x * 10


@workflow
def restart_wf(marker_dir: str, seconds: float) -> int:
    a = record(marker_dir=marker_dir, name="first", x=1)
    b = sleep_then(marker_dir=marker_dir, seconds=seconds, x=a)
    return record(marker_dir=marker_dir, name="last", x=b)


@task
def noop() -> None:
    pass


@workflow
def noop_wf() -> None:
    noop()
