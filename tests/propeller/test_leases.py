"""Execution leases between replicas on one database (propeller/leases.py), with a clock the test moves."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import update

from flytelite.propeller.leases import LeaseLost, Leases
from flytelite.propeller.workflow_executor import WorkflowExecutor
from flytelite.store.models import FlyteWorkflow
from tests.catalog.helpers import ManualClock
from tests.propeller import dag_workflows as dw
from tests.propeller import harness as h
from tests.propeller.inprocess import InProcessPlugin, engine_for
from tests.propeller.test_node_executor import IN_PROCESS


@pytest.fixture
def ctx(tmp_path):
    ctx = h.make_context(tmp_path)
    ctx.clock = ManualClock()
    return ctx


def _execution(ctx, name: str):
    return h.create_execution(ctx, h.compile_entity(dw.fan_out, IN_PROCESS), {"x": 1}, name)


def test_one_replica_holds_an_execution_until_its_lease_expires(ctx):
    a, b = Leases(ctx, "replica-a", 15), Leases(ctx, "replica-b", 15)
    first, second = _execution(ctx, "first"), _execution(ctx, "second")
    assert sorted(a.claim()) == sorted([first, second])
    assert b.claim() == [] and b.claim([first]) == []
    ctx.clock.advance(10)
    assert sorted(a.claim()) == sorted([first, second])  # renewed: 15 s from now
    ctx.clock.advance(10)
    assert b.claim([first]) == []
    ctx.clock.advance(6)  # a stopped renewing 16 s ago
    assert b.claim([first]) == [first]
    assert a.claim() == [second]
    # One takeover (first, from a), counted once; renewals and a's own lapsed lease (second) are none.
    assert ctx.metrics.counter("flytelite:leases:takeovers") == 1


def test_a_replica_knows_how_long_it_holds_each_lease(ctx):
    """What the engine asks before starting a task's process (WorkflowExecutor._may_launch)."""
    a, b = Leases(ctx, "replica-a", 15), Leases(ctx, "replica-b", 15)
    key = _execution(ctx, "held")
    assert not a.holds(key, 0)
    assert a.claim([key]) == [key]
    assert a.holds(key, 15) and not a.holds(key, 15.1)
    ctx.clock.advance(11)
    assert a.holds(key, 4) and not a.holds(key, 5)
    assert a.claim() == [key]  # a sweep renews it
    assert a.holds(key, 15)
    ctx.clock.advance(16)
    assert not a.holds(key, 0)
    assert b.claim() == [key] and b.holds(key, 15)
    assert a.claim() == [] and not a.holds(key, 0)
    b.release()
    assert not b.holds(key, 0)


def test_a_clean_stop_releases_every_lease_at_once(ctx):
    a, b = Leases(ctx, "replica-a", 15), Leases(ctx, "replica-b", 15)
    key = _execution(ctx, "released")
    assert a.claim() == [key]
    a.release()
    assert b.claim() == [key]
    assert ctx.metrics.counter("flytelite:leases:takeovers") == 0  # released, not lapsed


def test_finished_executions_are_never_claimed(ctx):
    a = Leases(ctx, "replica-a", 15)
    key = _execution(ctx, "finished")
    with ctx.db.session() as s:
        s.execute(update(FlyteWorkflow).values(done=True))
    assert a.claim() == [] and a.claim([key]) == []


def test_a_replica_that_lost_its_lease_cannot_write_the_status(ctx):
    """A round of a replica whose lease another replica took is dropped, not persisted over the new owner."""
    a, b = Leases(ctx, "replica-a", 15), Leases(ctx, "replica-b", 15)
    key = _execution(ctx, "fenced")
    assert a.claim() == [key]
    ctx.clock.advance(20)
    assert b.claim() == [key]
    engine, _ = engine_for(ctx, InProcessPlugin({}))
    late = WorkflowExecutor(ctx, engine.executor.events, engine.executor.nodes, lambda *_: None, leases=a)
    with pytest.raises(LeaseLost, match="driven by another replica"):
        late.handle(key)
    with ctx.db.session() as s:
        assert s.get(FlyteWorkflow, key).status_json == "{}"  # nothing of a's round was written
    assert late.record_failed_round(key, RuntimeError("x")) is False  # nor counted against the execution


def test_a_sweep_takes_only_its_share_of_the_free_executions(ctx):
    live = {"n": 3}
    a, b, c = (Leases(ctx, f"replica-{x}", 15, peers=lambda: live["n"]) for x in "abc")
    keys = [_execution(ctx, f"shared{i}") for i in range(9)]
    held = {r: set(r.claim()) for r in (a, b, c)}
    assert [len(h) for h in held.values()] == [3, 3, 3]
    assert set().union(*held.values()) == set(keys)
    # a dies: b and c renew theirs, and once a's leases expire they split its three between them.
    ctx.clock.advance(10)
    live["n"] = 2
    assert set(b.claim()) == held[b] and set(c.claim()) == held[c]
    ctx.clock.advance(6)
    took_b = set(b.claim()) - held[b]
    took_c = set(c.claim()) - held[c]
    assert (len(took_b), len(took_c)) == (2, 1)
    assert took_b | took_c == held[a]


def test_a_wake_up_claims_its_execution_beyond_the_share(ctx):
    a = Leases(ctx, "replica-a", 15, peers=lambda: 2)
    b = Leases(ctx, "replica-b", 15, peers=lambda: 2)
    for i in range(3):
        _execution(ctx, f"woken{i}")
    assert len(a.claim()) == 2
    assert len(b.claim()) == 1
    new = _execution(ctx, "woken-new")
    assert a.claim([new]) == [new]


def test_replicas_sweeping_at_once_never_share_an_execution(ctx):
    keys = [_execution(ctx, f"raced{i}") for i in range(30)]
    replicas = [Leases(ctx, f"replica-{i}", 15, peers=lambda: 3) for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda r: set(r.claim()), replicas))
    assert all(len(r) <= 10 for r in results), [len(r) for r in results]
    assert sum(len(r) for r in results) == len(set().union(*results))
    assert set().union(*results) <= set(keys)
