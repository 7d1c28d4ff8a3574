"""Flyte 2 tasks for tests/flyte2/test_cache.py: cached tasks that leave a mark each time they run."""

import asyncio
import os

import flyte

env = flyte.TaskEnvironment(name="caching")


@env.task(cache=flyte.Cache(behavior="override", version_override="v1"))
async def doubled(x: int, marker_dir: str) -> int:
    with open(os.path.join(marker_dir, "doubled.log"), "a") as log:
        log.write(f"{x}\n")
    return 2 * x


@env.task
async def doubles_twice(x: int, marker_dir: str) -> list[int]:
    return [await doubled(x, marker_dir), await doubled(x, marker_dir), await doubled(x + 1, marker_dir)]


@env.task(cache=flyte.Cache(behavior="override", version_override="v1", serialize=True))
async def slow_square(x: int, marker_dir: str) -> int:
    with open(os.path.join(marker_dir, "slow_square.log"), "a") as log:
        log.write(f"{x}\n")
    await asyncio.sleep(2)
    return x * x


@env.task
async def squares_at_once(x: int, n: int, marker_dir: str) -> list[int]:
    return list(await asyncio.gather(*[slow_square(x, marker_dir) for _ in range(n)]))
