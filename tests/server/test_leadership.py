"""Leadership among replicas on one database (server/leadership.py): one owner at a time, renewal, expiry
with a clock the test moves, release, and a race of many replicas of which exactly one wins."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import timedelta

import pytest

from flytelite.config import Config
from flytelite.context import Context
from flytelite.idl.times import Clock
from flytelite.server.app import build_context
from flytelite.server.leadership import SCHEDULER, Leadership, leader_of
from flytelite.testing import database_url_for
from tests.scheduler.harness import T0, ManualClock

LEASE = 15.0


def open_replica(home, clock: Clock) -> Context:
    """The database of `home` as one more replica process would open it: an engine and pool of its own."""
    ctx = build_context(Config(home=home, database_url=database_url_for(home)))
    ctx.clock = clock
    return ctx


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def replicas(tmp_path, clock):
    contexts = [open_replica(tmp_path / "home", clock) for _ in range(2)]
    yield contexts
    for ctx in contexts:
        ctx.db.dispose()


@pytest.fixture
def a(replicas) -> Leadership:
    return Leadership(replicas[0], SCHEDULER, "replica-a", LEASE)


@pytest.fixture
def b(replicas) -> Leadership:
    return Leadership(replicas[1], SCHEDULER, "replica-b", LEASE)


def owner(leadership: Leadership) -> str | None:
    state = leader_of(leadership.ctx, leadership.name, leadership.ctx.clock.now())
    return state.owner if state is not None else None


def test_one_owner_until_its_lease_expires(a, b, clock, caplog):
    assert owner(a) is None
    assert a.acquire() and a.held()
    assert not b.acquire() and not b.held()
    assert owner(b) == "replica-a"
    clock.advance(timedelta(seconds=10))
    assert a.acquire()  # renewed: 15 s from now
    clock.advance(timedelta(seconds=10))
    assert not b.acquire()
    clock.advance(timedelta(seconds=6))  # a stopped renewing 16 s ago
    with caplog.at_level(logging.INFO, logger="flytelite.server.leadership"):
        assert b.acquire() and b.held()
        assert not a.held()
        # The database says no at a's next renewal: a knows it does not lead.
        assert not a.acquire() and not a.held()
    assert owner(a) == "replica-b"
    assert "replica replica-b now leads 'scheduler'" in caplog.text
    assert "replica replica-a lost the 'scheduler' leadership to replica-b" in caplog.text


def test_renewal_keeps_the_time_it_was_acquired_and_moves_the_expiry(a, clock):
    assert a.acquire()
    clock.advance(timedelta(seconds=5))
    assert a.acquire()
    state = leader_of(a.ctx, SCHEDULER, clock.now())
    assert state is not None
    assert (state.owner, state.acquired_at, state.expires_at) == ("replica-a", T0, T0 + timedelta(seconds=20))


def test_the_holder_stops_trusting_its_win_before_others_may_take_it(a, b, clock):
    """Three quarters of the period after its last renewal began a holder no longer acts as the leader, while
    nobody else may take the leadership for another quarter: the margin for a late renewal and clock skew."""
    assert a.acquire()
    clock.advance(timedelta(seconds=11))
    assert a.held()
    clock.advance(timedelta(seconds=0.5))
    assert not a.held()
    assert not b.acquire() and owner(b) == "replica-a"
    assert a.acquire() and a.held()  # still its own: renewing wins it back at once


def test_release_lets_another_replica_lead_at_once(a, b):
    assert a.acquire()
    b.release()  # not b's to give up: nothing changes
    assert owner(a) == "replica-a"
    a.release()
    assert not a.held() and owner(a) is None
    assert b.acquire() and owner(b) == "replica-b"
    a.release()
    assert owner(b) == "replica-b"


def test_leaderships_of_different_names_are_independent(replicas):
    scheduler = Leadership(replicas[0], SCHEDULER, "replica-a", LEASE)
    other = Leadership(replicas[1], "something-else", "replica-b", LEASE)
    assert scheduler.acquire() and other.acquire()


def test_a_lease_period_of_zero_is_refused(replicas):
    with pytest.raises(ValueError, match="more than 0 seconds"):
        Leadership(replicas[0], SCHEDULER, "replica-a", 0)


def test_of_many_replicas_racing_exactly_one_wins(tmp_path, clock):
    """Eight replicas (each with its own connection pool) race for a leadership whose row does not exist yet,
    then, once the winner's lease expired, the seven others race again."""
    contexts = [open_replica(tmp_path / "home", clock) for _ in range(8)]
    claims = [Leadership(ctx, SCHEDULER, f"replica-{i}", LEASE) for i, ctx in enumerate(contexts)]

    def race(racers: list[Leadership]) -> list[Leadership]:
        barrier = threading.Barrier(len(racers))
        won: list[Leadership] = []
        errors: list[BaseException] = []

        def claim(leadership: Leadership) -> None:
            barrier.wait()
            try:
                if leadership.acquire():
                    won.append(leadership)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=claim, args=(r,)) for r in racers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        return won

    try:
        first = race(claims)
        assert len(first) == 1, [w.owner for w in first]
        assert owner(claims[0]) == first[0].owner
        clock.advance(timedelta(seconds=LEASE + 1))
        second = race([c for c in claims if c is not first[0]])
        assert len(second) == 1, [w.owner for w in second]
        assert owner(claims[0]) == second[0].owner
    finally:
        for ctx in contexts:
            ctx.db.dispose()


def test_a_campaign_keeps_the_leadership_and_releases_it_when_stopped(tmp_path):
    """On the real clock: a campaigning replica leads, a second one keeps trying in vain, and takes over as
    soon as the first stops (a clean stop releases at once instead of waiting for expiry)."""
    contexts = [open_replica(tmp_path / "home", Clock()) for _ in range(2)]
    first = Leadership(contexts[0], SCHEDULER, "replica-a", 0.8)
    second = Leadership(contexts[1], SCHEDULER, "replica-b", 0.8)
    attempts = {"replica-b": 0}
    real_acquire = second.acquire

    def counting_acquire() -> bool:
        attempts["replica-b"] += 1
        return real_acquire()

    second.acquire = counting_acquire  # type: ignore[method-assign]

    async def wait_for(predicate, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.02)

    async def scenario() -> None:
        stop_first, stop_second = asyncio.Event(), asyncio.Event()
        campaign_first = asyncio.create_task(first.campaign(stop_first))
        await wait_for(first.held, "replica-a to lead")
        campaign_second = asyncio.create_task(second.campaign(stop_second))
        # Several renewals of replica-a's lease and attempts of replica-b: replica-a keeps leading.
        await wait_for(lambda: attempts["replica-b"] >= 4, "replica-b to try a few times")
        assert first.held() and not second.held() and owner(first) == "replica-a"
        stop_first.set()
        await campaign_first
        assert not first.held()
        await wait_for(second.held, "replica-b to take over")
        stop_second.set()
        await campaign_second
        assert owner(first) is None

    try:
        asyncio.run(scenario())
    finally:
        for ctx in contexts:
            ctx.db.dispose()
