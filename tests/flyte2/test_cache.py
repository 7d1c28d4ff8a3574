"""flyte.Cache through flytelite's catalog: a cached task's outputs are reused for the same inputs (by a child
and by a run's root alike), and a serialized one is computed once while the others wait for it."""

from __future__ import annotations

from flyteidl2.common import identifier_pb2
from flyteidl2.workflow import run_service_connect, run_service_pb2

from tests.flyte2.conftest import NO_SDK, SUCCEEDED, drive

pytestmark = NO_SDK
CACHE_HIT, CACHE_POPULATED = 2, 3  # flyteidl2.core.CatalogCacheStatus


def _cache_statuses(server, run: str) -> dict[str, int]:
    runs = run_service_connect.RunServiceClientSync(server.url)
    actions = runs.list_actions(run_service_pb2.ListActionsRequest(run_id=identifier_pb2.RunIdentifier(
        project="flytesnacks", domain="development", name=run))).actions
    return {a.id.name: a.status.cache_status for a in actions if a.id.name != "a0"}


def test_a_cached_task_runs_once_per_inputs(server, tmp_path):
    remote = drive(server, "doubles_twice", {"x": 3, "marker_dir": str(tmp_path)}, file="caching.py")
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["[6, 6, 8]"], remote
    assert sorted((tmp_path / "doubled.log").read_text().split()) == ["3", "4"]
    assert sorted(_cache_statuses(server, remote["name"]).values()) == [CACHE_HIT, CACHE_POPULATED, CACHE_POPULATED]
    # The same task and inputs as a run's root: the children's entry answers.
    again = drive(server, "doubled", {"x": 3, "marker_dir": str(tmp_path)}, file="caching.py")
    assert again["phase"] == SUCCEEDED and again["outputs"] == ["6"], again
    assert sorted((tmp_path / "doubled.log").read_text().split()) == ["3", "4"]


def test_a_serialized_cached_task_is_computed_once_while_the_others_wait(server, tmp_path):
    remote = drive(server, "squares_at_once", {"x": 5, "n": 3, "marker_dir": str(tmp_path)}, file="caching.py")
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["[25, 25, 25]"], remote
    assert (tmp_path / "slow_square.log").read_text().split() == ["5"]
