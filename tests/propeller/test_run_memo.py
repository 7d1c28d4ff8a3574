"""What a Flyte 2 run's rounds remember between them (propeller/runs.py's Memo): which actions a round looks at."""

from __future__ import annotations

import math

from flytelite.propeller.runs import SWEEP_SECONDS, Memo
from flytelite.runs.store import Glance, Phase
from flytelite.store.models import Action


def _action(name: str, phase: int = Phase.ACTION_PHASE_RUNNING, done: bool = False) -> Action:
    return Action(name=name, phase=phase, done=done)


def _glances(*names: str, parent: str = "a0", aborting: frozenset = frozenset()) -> list[Glance]:
    return [Glance(n, "" if n == "a0" else parent, n in aborting) for n in names]


def test_a_round_looks_at_new_woken_due_and_aborting_actions_only():
    memo = Memo(swept_at=0.0)
    glances = _glances("a0", "c1", "c2", "c3")
    live = {g.name for g in glances}
    assert memo.due(glances, live, {"a0"}, 1.0) == live  # all new
    memo.waiting = {"a0"}
    memo.looked(_action("a0"), None, 1.0)
    memo.looked(_action("c1"), None, 1.0)
    memo.looked(_action("c2"), 5.0, 1.0)
    memo.looked(_action("c3"), None, 1.0)
    assert memo.due(glances, live, {"a0"}, 2.0) == set()  # nothing changed
    memo.wake("c1")
    assert memo.due(glances, live, {"a0"}, 2.0) == {"c1"}
    assert memo.due(glances, live, {"a0"}, 2.0) == set()  # a wake is used once
    assert memo.due(glances, live, {"a0"}, 6.0) == {"c2"}  # its time came
    aborting = _glances("a0", "c1", "c2", "c3", aborting=frozenset({"c3"}))
    assert memo.due(aborting, live, {"a0"}, 2.0) == {"c3"}
    assert memo.due(glances, live, set(), 2.0) == {"a0"}  # its children all ended: it reclaims its slot
    orphans = [Glance("c1", "gone", False)]
    assert memo.due(orphans, {"c1"}, set(), 2.0) == {"c1"}  # its parent ended: it is aborted


def test_a_woken_queued_action_makes_every_queued_one_due():
    memo = Memo(swept_at=0.0)
    glances = _glances("a0", "q1", "q2", "r1")
    live = {g.name for g in glances}
    for name in ("q1", "q2"):
        memo.looked(_action(name, Phase.ACTION_PHASE_QUEUED), None, 0.0)
    memo.looked(_action("r1"), None, 0.0)
    memo.looked(_action("a0"), None, 0.0)
    memo.waiting = {"a0"}
    memo.wake("q1")  # the plugin wakes one waiter of a run when a task slot frees
    assert memo.due(glances, live, {"a0"}, 1.0) == {"q1", "q2"}


def test_ended_actions_are_forgotten_and_the_next_look_comes_by_the_sweep_at_the_latest():
    memo = Memo(swept_at=0.0)
    memo.looked(_action("c1"), 3.0, 0.0)
    memo.looked(_action("c2"), None, 0.0)
    assert memo.soonest({"c1", "c2"}, 1.0) == 2.0
    memo.looked(_action("c1", Phase.ACTION_PHASE_SUCCEEDED, done=True), None, 1.0)
    assert "c1" not in memo.at and memo.at["c2"] == math.inf
    assert memo.soonest({"c2"}, 1.0) == SWEEP_SECONDS - 1.0
    assert memo.soonest(set(), 1.0) == SWEEP_SECONDS - 1.0 and memo.at == {}  # c2 ended elsewhere
