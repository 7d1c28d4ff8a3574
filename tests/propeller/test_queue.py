"""The WorkQueue: dedup while queued, one worker per key, delayed adds, shutdown."""

from __future__ import annotations

import asyncio
import threading

import pytest

from flytelite.propeller.queue import QueueShutDown, WorkQueue


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def new_queue() -> WorkQueue:
    q = WorkQueue()
    q.bind(asyncio.get_running_loop())
    return q


def test_a_queued_key_is_held_once():
    async def go():
        q = new_queue()
        q.add("a")
        q.add("b")
        q.add("a")
        return len(q), [await q.get(), await q.get()]

    assert run(go()) == (2, ["a", "b"])


def test_a_key_being_processed_is_not_handed_out_again_until_done():
    async def go():
        q = new_queue()
        q.add("a")
        key = await q.get()
        q.add("a")  # while processing: remembered, not queued
        assert len(q) == 0 and q.is_processing("a")
        q.done(key)
        assert len(q) == 1
        return await q.get()

    assert run(go()) == "a"


def test_add_after_fires_once_and_the_earliest_timer_wins():
    async def go():
        q = new_queue()
        q.add_after("a", 0.2)
        q.add_after("a", 0.05)
        q.add_after("a", 0.3)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        key = await q.get()
        elapsed = loop.time() - t0
        q.done(key)
        await asyncio.sleep(0.4)
        return key, elapsed, len(q)

    key, elapsed, remaining = run(go())
    assert key == "a" and 0.04 <= elapsed < 0.19 and remaining == 0


def test_add_threadsafe_wakes_a_waiting_worker():
    async def go():
        q = new_queue()
        threading.Timer(0.05, q.add_threadsafe, args=("x",)).start()
        return await q.get()

    assert run(go()) == "x"


def test_rate_limited_adds_back_off_and_forget_resets():
    async def go():
        q = new_queue()
        delays = [q.add_rate_limited("a", base=0.01, cap=0.05) for _ in range(4)]
        q.forget("a")
        return delays, q.add_rate_limited("a", base=0.01)

    delays, after_forget = run(go())
    assert delays == [0.01, 0.02, 0.04, 0.05] and after_forget == 0.01


def test_shutdown_releases_waiting_workers_and_stops_handing_out_keys():
    async def go():
        q = new_queue()
        waiter = asyncio.create_task(q.get())
        await asyncio.sleep(0.01)
        q.add("left-over")
        await waiter
        q.add("another")
        q.shutdown()
        with pytest.raises(QueueShutDown):
            await q.get()

    run(go())
