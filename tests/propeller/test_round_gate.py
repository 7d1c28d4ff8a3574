"""The round gate: one round at a time, unless the running one has gone on long enough to be waiting."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine

import pytest

from flytelite.propeller.round_gate import RoundGate

WAIT = 30  # seconds: a deadline only a broken gate reaches


def in_loop(test: Callable[[], Coroutine]) -> Callable[[], None]:
    """Run an async test on an event loop of its own."""
    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())
    return run


async def blocked_round_then_another(gate: RoundGate) -> tuple[asyncio.Task, asyncio.Event, asyncio.Event,
                                                                asyncio.Task]:
    """A round that runs until `release` is set; once it runs, a second round that sets `second_runs`."""
    first_runs, release, second_runs = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def first_round() -> None:
        first_runs.set()
        await release.wait()

    async def second_round() -> None:
        second_runs.set()

    first = asyncio.create_task(gate.run(first_round))
    await asyncio.wait_for(first_runs.wait(), WAIT)
    second = asyncio.create_task(gate.run(second_round))
    return first, release, second_runs, second


async def set_within(event: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), seconds)
    except TimeoutError:
        return False
    return True


@in_loop
async def test_a_round_waits_while_a_young_round_runs():
    first, release, second_runs, second = await blocked_round_then_another(RoundGate(fresh_seconds=3600))
    # Whatever the machine's load, the first round stays young for an hour: the second must not start.
    assert not await set_within(second_runs, 0.3)
    release.set()
    await asyncio.wait_for(first, WAIT)
    assert await set_within(second_runs, WAIT)
    await second


@in_loop
async def test_a_round_starts_beside_one_that_has_run_past_the_window():
    first, release, second_runs, second = await blocked_round_then_another(RoundGate(fresh_seconds=0.01))
    assert await set_within(second_runs, WAIT), "a round waiting on I/O held up the next one"
    assert not first.done()
    release.set()
    await asyncio.wait_for(asyncio.gather(first, second), WAIT)


@in_loop
async def test_a_waiting_round_that_is_cancelled_does_not_take_the_next_turn():
    gate = RoundGate(fresh_seconds=3600)
    first, release, second_runs, second = await blocked_round_then_another(gate)
    third_runs = asyncio.Event()

    async def third_round() -> None:
        third_runs.set()

    third = asyncio.create_task(gate.run(third_round))
    await asyncio.sleep(0)
    second.cancel()
    release.set()
    await asyncio.wait_for(first, WAIT)
    assert await set_within(third_runs, WAIT), "the freed gate woke the cancelled round and nobody else"
    assert not second_runs.is_set()
    await third


@in_loop
async def test_a_round_that_raises_frees_the_gate_and_returns_the_value_otherwise():
    gate = RoundGate(fresh_seconds=3600)

    async def bad_round() -> None:
        raise ValueError("bad round")

    async def good_round() -> int:
        return 42

    with pytest.raises(ValueError):
        await gate.run(bad_round)
    assert await asyncio.wait_for(gate.run(good_round), WAIT) == 42
