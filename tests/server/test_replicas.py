"""The replicas table (server/replicas.py): what `flytelite status` reads, and the live engine replicas a
sweep shares the free executions with."""

from __future__ import annotations

from datetime import timedelta

from flytelite.server.replicas import ReplicaRegistry, cluster_state
from tests.scheduler.harness import T0, ManualClock
from tests.server.test_leadership import open_replica


def test_status_shows_each_replicas_queue_and_the_live_engines(tmp_path):
    clock = ManualClock(T0)
    ctx = open_replica(tmp_path / "home", clock)
    engine = ReplicaRegistry(ctx, "engine-a", "engine")
    api = ReplicaRegistry(ctx, "api-a", "api")
    other = ReplicaRegistry(ctx, "all-b", "all")
    engine.register("")
    api.register("http://localhost:30080")
    other.register("http://localhost:30081")
    engine.heartbeat(queue_depth=4)
    state = {r.id: r for r in cluster_state(ctx, clock.now()).replicas}
    assert (state["engine-a"].queue_depth, state["api-a"].queue_depth) == (4, 0)
    assert state["api-a"].address == "http://localhost:30080"
    assert engine.live_engines() == 2  # itself and the `all` replica; the API replica runs no engine
    clock.advance(timedelta(seconds=ctx.config.engine.lease_seconds + 1))  # the others stop beating
    engine.heartbeat(queue_depth=0)
    assert engine.live_engines() == 1
    other.deregister()
    assert {r.id for r in cluster_state(ctx, clock.now()).replicas} == {"engine-a", "api-a"}
