"""The round gate: one round at a time, unless the running one has gone on long enough to be waiting."""

from __future__ import annotations

import threading

import pytest

from flytelite.propeller.gate import RoundGate

WAIT = 30  # seconds: a deadline only a broken gate reaches


def in_thread(gate: RoundGate, fn) -> threading.Thread:
    thread = threading.Thread(target=gate.run, args=(fn,), daemon=True)
    thread.start()
    return thread


def blocked_round_then_another(gate: RoundGate) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A round that runs until `release` is set; once it runs, a second round that sets `second_runs`."""
    first_runs, release, second_runs = threading.Event(), threading.Event(), threading.Event()
    first = in_thread(gate, lambda: (first_runs.set(), release.wait(WAIT)))
    assert first_runs.wait(WAIT)
    in_thread(gate, second_runs.set)
    return first, release, second_runs


def test_a_round_waits_while_a_young_round_runs():
    first, release, second_runs = blocked_round_then_another(RoundGate(fresh_seconds=3600))
    # Whatever the machine's load, the first round stays young for an hour: the second must not start.
    assert not second_runs.wait(0.3)
    release.set()
    first.join(WAIT)
    assert second_runs.wait(WAIT)


def test_a_round_starts_beside_one_that_has_run_past_the_window():
    first, release, second_runs = blocked_round_then_another(RoundGate(fresh_seconds=0.01))
    assert second_runs.wait(WAIT), "a round waiting on I/O held up the next one"
    assert first.is_alive()
    release.set()
    first.join(WAIT)


def test_a_round_that_raises_frees_the_gate_and_returns_the_value_otherwise():
    gate = RoundGate(fresh_seconds=3600)
    with pytest.raises(ValueError):
        gate.run(lambda: (_ for _ in ()).throw(ValueError("bad round")))
    assert gate.run(lambda x: x + 1, 41) == 42
