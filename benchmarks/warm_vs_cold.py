"""Warm workers against cold processes, timed end to end (not part of the test suite).

    python -m benchmarks.warm_vs_cold [--chain 20] [--runs 3]

Starts two real flytelite servers, one with `engine.warm_workers: false`, runs
benchmarks/workflows/warm_chain.py with `pyflyte run --remote` on each and prints medians of:
the chain's execution time (created to SUCCEEDED), each task attempt's duration (RUNNING to
SUCCEEDED as the task execution records it) and flytelite's overhead per task (chain time per
task minus the median attempt).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flytekit.configuration import Config as FlyteConfig
from flytekit.remote import FlyteRemote

from flytelite.testing import make_server

HERE = Path(__file__).parent
PYFLYTE = str(Path(sys.executable).parent / "pyflyte")
URL = re.compile(r"/executions/([a-z0-9]+)")


def chain_file(folder: Path, length: int) -> str:
    steps = "\n".join("    x = warm_step(x=x)" for _ in range(length))
    (folder / "warm_chain.py").write_text(
        "from flytekit import task, workflow\n\n\n@task\ndef warm_step(x: int) -> int:\n    return x + 1\n\n\n"
        f"@workflow\ndef warm_chain(x: int = 0) -> int:\n{steps}\n    return x\n")
    return "warm_chain.py"


def run_chain(server, folder: Path, file: str, length: int) -> tuple[float, list[float]]:
    out = subprocess.run([PYFLYTE, "--config", str(server.config_path), "run", "--remote", file, "warm_chain"],
                         cwd=folder, env=server.client_env(), capture_output=True, text=True, check=True)
    name = URL.search(out.stdout + out.stderr).group(1)
    remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                         default_domain="development")
    while not (execution := remote.fetch_execution(name=name)).is_done:
        time.sleep(0.05)
    assert execution.closure.phase == 4 and execution.outputs["o0"] == length, execution.closure.error
    execution = remote.sync_execution(execution, sync_nodes=True)
    attempts = [t.closure.duration.total_seconds() for n in execution.node_executions.values()
                for t in n.task_executions]
    return (execution.closure.updated_at - execution.closure.created_at).total_seconds(), attempts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chain", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("warm", "cold"):
            folder = Path(tmp) / mode
            folder.mkdir()
            server = make_server(folder, config=f"engine:\n  warm_workers: {'true' if mode == 'warm' else 'false'}\n")
            server.start()
            try:
                wf = folder / "wf"
                wf.mkdir()
                file = chain_file(wf, args.chain)
                totals, attempts = [], []
                for _ in range(args.runs):
                    total, per_attempt = run_chain(server, wf, file, args.chain)
                    totals.append(total)
                    attempts += per_attempt
            finally:
                server.stop()
            total, attempt = statistics.median(totals), statistics.median(attempts)
            rows.append(f"| {mode} | {total:.2f} s | {attempt * 1000:.0f} ms | "
                        f"{(total / args.chain - attempt) * 1000:.0f} ms | {args.runs} |")
    print(f"| mode | {args.chain}-task chain, created to SUCCEEDED | task attempt (median) | "
          "overhead per task | runs |\n| --- | --- | --- | --- | --- |\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
