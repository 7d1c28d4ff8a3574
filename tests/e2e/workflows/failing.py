import os
import time
from pathlib import Path

from flytekit import task, workflow
from flytekit.exceptions.user import FlyteRecoverableException


@task
def boom(x: int) -> int:
    if x != 42:
        raise ValueError(f"boom: x was {x}, expected something else")
    return x


@workflow
def failing_wf(x: int = 3) -> int:
    return boom(x=x)


@task(retries=2)
def flaky(marker_dir: str) -> int:
    """Fails until its third attempt; counts attempts in a folder the test reads."""
    attempt = int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"attempt-{attempt}").touch()
    if attempt < 2:
        raise FlyteRecoverableException(f"flaky failure on attempt {attempt}")
    return attempt


@task(retries=2)
def stubborn(marker_dir: str) -> int:
    """A plain exception is not recoverable in flytekit: Flyte does not retry it despite retries=2."""
    attempt = int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"attempt-{attempt}").touch()
    if attempt >= 0:
        raise RuntimeError(f"stubborn failure on attempt {attempt}")
    return attempt


@workflow
def flaky_wf(marker_dir: str) -> int:
    return flaky(marker_dir=marker_dir)


@workflow
def stubborn_wf(marker_dir: str) -> int:
    return stubborn(marker_dir=marker_dir)


@task
def sleepy(seconds: int, marker_dir: str) -> int:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, "pid").write_text(str(os.getpid()))
    time.sleep(seconds)
    return seconds


@workflow
def sleepy_wf(marker_dir: str, seconds: int = 600) -> int:
    return sleepy(seconds=seconds, marker_dir=marker_dir)
