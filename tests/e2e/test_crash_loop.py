"""The crash test in the suite: one server SIGKILLed 10 times within about a minute, started again each time
on the same home, while a mix of executions runs (chains, map tasks, dynamic workflows, a serialized cache,
gates; workflows/replica_mix.py). Every execution ends once with the right outputs, no task that had
succeeded runs again, no node stays active. On SQLite by default, on PostgreSQL under `make test-postgres`."""

from __future__ import annotations

import random
import time

import pytest

from flytelite.testing import make_server
from tests.e2e.faults import check_once, kill_loop, launch, wait_all
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for

pytestmark = pytest.mark.e2e

# Short leases: the executions of the killed process are free again soon after its restart.
CONFIG = "engine:\n  resync_seconds: 0.5\n  lease_seconds: 3\n"
KILLS = 10
SEED = 7


def test_sigkill_loop_runs_every_execution_once(tmp_path):
    server = make_server(tmp_path / "srv", CONFIG)
    server.start()
    try:
        code = copy_workflows(tmp_path / "wf", "replica_mix.py")
        pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", "v1",
                "replica_mix.py", cwd=code)
        launched = launch(remote_for(server), tmp_path, chains=6, maps=3, dynamics=3, gates=2, cached=4)
        started = time.monotonic()
        happened = kill_loop([server], random.Random(SEED), [n for n, kind, _ in launched if kind == "gate"],
                             KILLS, pause=(1.5, 3.5))
        finished = wait_all([server], [name for name, _, _ in launched])
        took = time.monotonic() - started
        check_once([server], launched, finished, tmp_path / "marks", happened)
        print(f"\n[crash loop] {len(launched)} executions, {KILLS} SIGKILLs, all done once in {took:.0f} s")
    finally:
        server.stop()
