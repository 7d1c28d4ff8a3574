"""The Flyte 2 benchmark's tasks (benchmarks/flyte2.py), for the `flyte` SDK: flyte-benchmarks' shapes with empty
leaves."""

import flyte

env = flyte.TaskEnvironment(name="bench")


@env.task
async def leaf(i: int) -> int:
    return i


@env.task
async def single() -> int:
    return 0


@env.task
async def chain(n: int) -> int:
    x = 0
    for _ in range(n):
        x = await leaf(x + 1)
    return x


@env.task
def fanout(n: int) -> int:
    return sum(flyte.map(leaf, range(n)))
