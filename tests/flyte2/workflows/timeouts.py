"""Flyte 2 tasks for tests/flyte2/test_timeouts.py: each of flyte.Timeout's bounds, and retries with backoff."""

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path

import flyte
import flyte.errors

env = flyte.TaskEnvironment(name="timeouts")


async def _sleep_past_its_bound(marker_dir: str, log_name: str) -> None:
    """Note the attempt in `log_name`, then sleep far longer than any bound of these tasks."""
    with open(os.path.join(marker_dir, log_name), "a") as log:
        log.write(f"attempt {os.environ.get('FLYTE_ATTEMPT_NUMBER')}\n")
    await asyncio.sleep(600)


@env.task(timeout=flyte.Timeout(max_runtime=timedelta(seconds=2)), retries=1)
async def overruns(marker_dir: str) -> str:
    await _sleep_past_its_bound(marker_dir, "overruns.log")
    return "slept through max_runtime"


@env.task
async def catches_overrun(marker_dir: str) -> str:
    try:
        return await overruns(marker_dir)
    except flyte.errors.TaskTimeoutError as e:
        return f"caught {type(e).__name__}"


@env.task(timeout=flyte.Timeout(deadline=timedelta(seconds=3)), retries=3)
async def misses_deadline(marker_dir: str) -> str:
    await _sleep_past_its_bound(marker_dir, "deadline.log")
    return "slept through the deadline"


@env.task
async def holds_the_slot(marker_dir: str) -> None:
    Path(marker_dir, "holding").touch()
    await asyncio.sleep(600)


@env.task(timeout=flyte.Timeout(max_queued_time=timedelta(seconds=2)))
async def waits_for_a_slot() -> str:
    return "started"


@env.task
async def queued_too_long(marker_dir: str) -> str:
    """With one task slot: the root lends its slot to the child holding it, so the second child cannot start."""
    holder = asyncio.create_task(holds_the_slot(marker_dir))
    while not Path(marker_dir, "holding").exists():
        await asyncio.sleep(0.1)
    try:
        return await waits_for_a_slot()
    except flyte.errors.TaskTimeoutError as e:
        return f"caught {type(e).__name__}"
    finally:
        holder.cancel()


@env.task(retries=flyte.RetryStrategy(count=2, backoff=flyte.Backoff(base=timedelta(seconds=2), factor=2.0,
                                                                       cap=timedelta(seconds=3))))
async def backs_off(marker_dir: str) -> int:
    attempt = int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))
    with open(os.path.join(marker_dir, "backoff.log"), "a") as log:
        log.write(f"{attempt} {time.time()}\n")
    if attempt < 2:
        raise RuntimeError(f"attempt {attempt} fails on purpose")
    return attempt
