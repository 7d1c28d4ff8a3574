"""Task slots bound a Flyte 2 run's processes, and parents waiting on their children do not keep the slots from
them."""

from __future__ import annotations

import yaml

from flytelite.testing import make_server
from tests.attempts import attempts_roots
from tests.e2e.flyte_cli import wait_for
from tests.flyte2.conftest import NO_SDK, PYTHON, SUCCEEDED, drive, run_phase

pytestmark = NO_SDK


def test_a_tree_deeper_and_wider_than_the_slots_finishes(tmp_path):
    """Two slots, and a root whose three children each wait on a child of their own: holding their slots while
    waiting, the root and one child would leave no slot for the grandchild."""
    server = make_server(tmp_path, yaml.safe_dump({"images": {"default": PYTHON},
                                                   "engine": {"max_task_processes": 2}}))
    server.start()
    try:
        remote = drive(server, "nested", {"n": 3})
        assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["[1, 2, 3]"], remote
    finally:
        server.stop()


def test_a_map_never_runs_more_processes_than_the_slots(tmp_path):
    """60 items on two slots: at any time the parent (its slot lent to its children) and two items at most."""
    server = make_server(tmp_path, yaml.safe_dump({"images": {"default": PYTHON},
                                                   "engine": {"max_task_processes": 2}}))
    server.start()
    try:
        name = drive(server, "map_shift", {"n": 60}, mode="start")["name"]
        most = 0

        def ended() -> bool:
            nonlocal most
            # The attempts' own processes (an attempt may run tar, gzip or git for a moment as well).
            most = max(most, sum("/a0 --inputs " in line for line in attempts_roots(name)))
            return run_phase(server, name) == SUCCEEDED

        wait_for(ended, "the map to succeed", timeout=600)
        assert 2 <= most <= 3, most
    finally:
        server.stop()
