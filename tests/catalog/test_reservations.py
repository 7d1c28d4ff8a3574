"""Cache reservations (cache_serialize): acquire, held by another, heartbeat, expiry, release,
and two processes on one SQLite file."""

from __future__ import annotations

import multiprocessing
import time
from datetime import timedelta

from flyteidl.core import catalog_pb2

from flytelite.catalog import Catalog, catalog_key
from tests.catalog.helpers import compute_serialized, inputs, reserve_once, template

Status = catalog_pb2.CatalogReservation


def _key():
    return catalog_key(template(), inputs())


def test_a_free_key_is_acquired_for_three_heartbeats(catalog: Catalog, clock):
    r = catalog.get_or_extend_reservation(_key(), "A", heartbeat_interval=2)
    assert r.acquired and r.owner_id == "A" and r.status == Status.RESERVATION_ACQUIRED
    assert r.heartbeat_interval == timedelta(seconds=2)
    assert r.expires_at == clock.now() + timedelta(seconds=6)


def test_a_held_key_reports_its_holder(catalog: Catalog, clock):
    first = catalog.get_or_extend_reservation(_key(), "A", heartbeat_interval=2)
    other = catalog.get_or_extend_reservation(_key(), "B", heartbeat_interval=2)
    assert not other.acquired and other.owner_id == "A" and other.status == Status.RESERVATION_EXISTS
    assert other.expires_at == first.expires_at
    # Another key is independent.
    assert catalog.get_or_extend_reservation(catalog_key(template(), inputs(x=99)), "B", 2).acquired


def test_heartbeats_extend_and_an_expired_reservation_is_taken_over(catalog: Catalog, clock):
    key = _key()
    catalog.get_or_extend_reservation(key, "A", heartbeat_interval=1)   # expires at +3 s
    clock.advance(2)
    assert not catalog.get_or_extend_reservation(key, "B", 1).acquired
    beat = catalog.get_or_extend_reservation(key, "A", 1)              # heartbeat: now expires at +5 s
    assert beat.acquired and beat.expires_at == clock.now() + timedelta(seconds=3)
    clock.advance(2.5)
    assert not catalog.get_or_extend_reservation(key, "B", 1).acquired  # would have expired without the beat
    clock.advance(1)                                                    # A stopped beating (crashed)
    taken = catalog.get_or_extend_reservation(key, "B", 1)
    assert taken.acquired and taken.owner_id == "B"
    lost = catalog.get_or_extend_reservation(key, "A", 1)
    assert not lost.acquired and lost.owner_id == "B"


def test_release_frees_the_key_only_for_its_owner(catalog: Catalog):
    key = _key()
    catalog.get_or_extend_reservation(key, "A", 2)
    assert catalog.release_reservation(key, "B") is False
    assert not catalog.get_or_extend_reservation(key, "B", 2).acquired
    assert catalog.release_reservation(key, "A") is True
    assert catalog.release_reservation(key, "A") is False  # releasing twice is no error
    assert catalog.get_or_extend_reservation(key, "B", 2).acquired


def test_the_heartbeat_interval_is_capped_like_datacatalog(catalog: Catalog, clock):
    r = catalog.get_or_extend_reservation(_key(), "A", heartbeat_interval=timedelta(minutes=5))
    assert r.heartbeat_interval == timedelta(seconds=10)
    assert r.expires_at == clock.now() + timedelta(seconds=30)


def test_processes_racing_for_one_key_agree_on_one_owner(ctx, catalog: Catalog):
    key, home = _key(), str(ctx.config.home)
    start_at = time.time() + 2  # every process asks at the same moment
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        answers = pool.starmap(reserve_once, [(home, key, f"owner-{i}", start_at) for i in range(4)])
    holders = {holder for holder, _ in answers}
    assert len(holders) == 1
    assert sum(acquired for _, acquired in answers) == 1
    (winner,) = holders
    assert (winner, True) in answers
    assert catalog.get_or_extend_reservation(key, "someone else", 5).owner_id == winner


def test_serialized_executions_in_separate_processes_compute_once(ctx, catalog: Catalog):
    key, home = _key(), str(ctx.config.home)
    start_at = time.time() + 2
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(compute_serialized, [(home, key, f"owner-{i}", 100 + i, start_at) for i in range(4)])
    computed = [value for how, value in results if how == "computed"]
    assert len(computed) == 1, results
    assert all(value == computed[0] for _, value in results), results
    assert catalog.get(key).outputs.literals["o0"].scalar.primitive.integer == computed[0]
