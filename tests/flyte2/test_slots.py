"""Parents waiting on their children do not keep the task slots from them."""

from __future__ import annotations

import yaml

from flytelite.testing import make_server
from tests.flyte2.conftest import NO_SDK, PYTHON, SUCCEEDED, drive

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
