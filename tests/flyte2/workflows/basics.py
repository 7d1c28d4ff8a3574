"""Flyte 2 tasks for tests/flyte2: fan-out, map, traces, groups, errors, files, retries."""

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import flyte
import flyte.errors
import flyte.report
from flyte.io import File

env = flyte.TaskEnvironment(name="basics")


@dataclass
class Point:
    x: int
    y: float
    label: str


@env.task
async def square(x: int) -> int:
    return x * x


@env.task
async def gather_squares(n: int) -> list[int]:
    with flyte.group("squares"):
        return list(await asyncio.gather(*[square(i) for i in range(n)]))


@env.task
def shift(x: int) -> int:
    return x + 10


@env.task
def map_shift(n: int) -> list[int]:
    return list(flyte.map(shift, range(n)))


@flyte.trace
async def traced_double(x: int) -> int:
    return 2 * x


@env.task
async def with_trace(x: int) -> int:
    return await traced_double(x) + await square(x)


@env.task
async def fails(x: int) -> int:
    raise ValueError(f"no good: {x}")


@env.task
async def catches_child_failure(x: int) -> str:
    try:
        await fails(x)
    except flyte.errors.RuntimeUserError as e:
        return f"caught {e.code}"
    return "not raised"


@env.task
async def fails_uncaught(x: int) -> int:
    return await fails(x)


@env.task
async def nothing_out(x: int) -> None:
    print(f"no outputs for {x}")


@env.task
async def move_point(p: Point, dx: int) -> Point:
    return Point(x=p.x + dx, y=p.y * 2, label=p.label.upper())


@env.task
async def write_file(text: str) -> File:
    path = Path(tempfile.mkdtemp()) / "note.txt"
    path.write_text(text)
    return await File.from_local(str(path))


@env.task
async def read_file(f: File) -> str:
    async with f.open("rb") as handle:
        return bytes(await handle.read()).decode()


@env.task
async def file_round_trip(text: str) -> str:
    return await read_file(await write_file(text))


@env.task(retries=2)
async def flaky(x: int) -> int:
    attempt = int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))
    if attempt < 1:
        raise RuntimeError(f"attempt {attempt} fails on purpose")
    return x + attempt


@env.task
async def retried_child(x: int) -> int:
    return await flaky(x)


@env.task
async def sleeper(i: int, seconds: float, marker_dir: str) -> int:
    with open(os.path.join(marker_dir, f"child-{i}.log"), "a") as log:
        log.write(f"started attempt {os.environ.get('FLYTE_ATTEMPT_NUMBER')}\n")
    await asyncio.sleep(seconds)
    return i


@env.task
async def sleepy_fanout(n: int, seconds: float, marker_dir: str) -> list[int]:
    return list(await asyncio.gather(*[sleeper(i, seconds, marker_dir) for i in range(n)]))


@env.task
async def leaf(i: int) -> int:
    return i


@env.task
async def middle(i: int) -> int:
    return await leaf(i) + 1


@env.task
async def nested(n: int) -> list[int]:
    return list(await asyncio.gather(*[middle(i) for i in range(n)]))


@env.task(report=True)
async def reports(title: str) -> int:
    tab = flyte.report.get_tab("Summary")
    tab.log(f"<h2>{title}</h2>")
    await flyte.report.flush.aio()
    return len(title)


reusable = flyte.TaskEnvironment(name="reusable", reusable=flyte.ReusePolicy(replicas=1, concurrency=2))


@reusable.task
async def reused_square(x: int) -> int:
    return x * x


@env.task
async def calls_reused(n: int) -> list[int]:
    return list(await asyncio.gather(*[reused_square(i) for i in range(n)]))
