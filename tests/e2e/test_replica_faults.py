"""Proof under faults: three replicas on PostgreSQL and S3 run 50 mixed executions (chains, map tasks,
dynamic workflows, a serialized cache, gates) and a schedule while replicas are SIGKILLed at random
moments and started again on the same home. Every execution ends once with the right outputs, no task
that had succeeded runs again, no schedule slot fires twice, no node stays RUNNING."""

from __future__ import annotations

import os
import random
from datetime import timedelta

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.models.core.identifier import Identifier, ResourceType

from flytelite.testing import PG_ENV, make_server
from tests.e2e.faults import TERMINAL, VERSION, check_once, kill_loop, launch, wait_all, with_live
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for
from tests.scheduler.test_schedule_e2e import scheduled_at, scheduled_executions

pytestmark = pytest.mark.e2e

P, D = "flytesnacks", "development"
# Short leases, so the executions of a killed replica move within the test.
CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 3\n"
KILLS = 6
SEED = 13
def test_three_replicas_under_sigkills_run_every_execution_once(tmp_path, s3):
    if not os.environ.get(PG_ENV):
        pytest.skip("the fault test runs on PostgreSQL (run with --db=postgresql)")
    home = tmp_path / "home"
    replicas = [make_server(tmp_path / f"replica{i}", CONFIG + s3.server_config("faults"), home=home)
                for i in range(3)]
    for replica in replicas:
        with open(replica.config_path, "a") as f:
            f.write(s3.client_config())
        replica.start()
    try:
        code = copy_workflows(tmp_path / "wf", "replica_mix.py")
        pyflyte(replicas[0], "register", "--project", P, "--domain", D, "--version", VERSION,
                "--activate-launchplans", "replica_mix.py", cwd=code)
        launched = launch(remote_for(replicas[1]), tmp_path)
        gates = [name for name, kind, _ in launched if kind == "gate"]
        happened = kill_loop(replicas, random.Random(SEED), gates, KILLS)
        running = with_live(replicas, lambda r: sum(
            r.fetch_execution(name=name).closure.phase not in TERMINAL for name, _, _ in launched))
        happened.append(f"{running} executions still running after the last kill")
        schedule = Identifier(ResourceType.LAUNCH_PLAN, P, D, "mix_every_3s", VERSION)
        with_live(replicas, lambda r: r.deactivate_launchplan(schedule))
        finished = wait_all(replicas, [name for name, _, _ in launched])

        remote = remote_for(replicas[0])
        check_once(replicas, launched, finished, tmp_path / "marks", happened)

        # The schedule fired slot after slot, each slot once, whichever replica led the scheduler.
        fired = scheduled_executions(remote, "mix_every_3s")
        times = [scheduled_at(e) for e in fired]
        assert len(fired) >= 3, happened
        assert all(later - earlier == timedelta(seconds=3) for earlier, later in zip(times[:-1], times[1:], strict=True)), times
        for ex in wait_all(replicas, [e.id.name for e in fired]).values():
            assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.id.name
        print(f"\n[faults] {len(launched)} executions and {len(fired)} scheduled ones; " + "; ".join(happened))
    finally:
        for replica in replicas:
            replica.stop()
