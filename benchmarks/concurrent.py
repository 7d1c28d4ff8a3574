"""1,000 concurrent executions of a 3-node workflow through a real server's gRPC API (no-op plugin).

The server is the benchmarks' no-op server (noop_server.py: tasks answered at once, full persistence on). All
CreateExecution calls are sent at once (gRPC futures on one channel); timed until the last execution is
done, and every one must have SUCCEEDED. Memory is the server process's peak RSS (VmHWM).
Baseline: flytekit's local execution of the same workflow, 1,000 times one after another.
"""

from __future__ import annotations

import time
from pathlib import Path

from flyteidl.admin import common_pb2, execution_pb2

from benchmarks.common import D, P, Row, baseline, integer, register, timed
from benchmarks.server_client import BenchServer
from benchmarks.workflows import engine_wfs

EXECUTIONS = 1000


def concurrent_rows(root: Path, runs: int, local_runs: int) -> list[Row]:
    seconds, accepted, peaks = [], [], []
    with BenchServer(root / "concurrent", noop=True) as server:
        lp = register(server.stub, engine_wfs.three_wf)
        for run in range(runs):
            started = time.perf_counter()
            request = execution_pb2.ExecutionCreateRequest(
                project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=lp),
                inputs={"literals": {"x": integer(run)}})
            futures = [server.stub.CreateExecution.future(request) for _ in range(EXECUTIONS)]
            names = {f.result().id.name for f in futures}
            accepted.append(time.perf_counter() - started)
            assert len(names) == EXECUTIONS, "CreateExecution handed out the same name twice"
            while server.unfinished():
                time.sleep(0.05)
            seconds.append(time.perf_counter() - started)
            peaks.append(server.peak_rss_mib())
        if server.failed():
            raise RuntimeError(f"some of the {EXECUTIONS} concurrent executions did not succeed; see "
                               f"{server.server.log_path}")
        done = server.stub.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10_000, filters="eq(phase,SUCCEEDED)"))
        assert len(done.executions) == EXECUTIONS * runs, f"{len(done.executions)} executions succeeded"
    local = [timed(lambda: [engine_wfs.three_wf(x=0) for _ in range(EXECUTIONS)]) for _ in range(local_runs)]
    accepted_note = f"all accepted after {sorted(accepted)[len(accepted) // 2]:.2f} s (median)"
    return [
        Row(f"engine only: {EXECUTIONS:,} concurrent executions of a 3-node workflow, through gRPC, all done",
            seconds, "s", goal="all accepted and completed", met=True, note=accepted_note,
            baselines=[baseline(f"flytekit local, {EXECUTIONS:,} runs in a row", local, "s")]),
        Row(f"engine only: server peak memory (VmHWM) with {EXECUTIONS:,} concurrent executions", peaks, "MiB",
            goal="< 1,024 MiB").check("<", 1024),
    ]
