"""Peer rows: Prefect and Dagster running the real-task rows' two workflows, measured in the same run.

Each peer gets a venv of its own (benchmarks/venvs.py), created once with the version pinned in PEERS; its
script in benchmarks/peer_workflows/ runs there as a subprocess and prints its timings as JSON after
checking every result (the chain returns 100, the fan-out the list of x + 1), so a broken run cannot report
a time.
A peer that cannot be installed or run gives a row saying why, never a number. This module must never
install anything into flytelite's own venv or inside the clone.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import Row
from benchmarks.peer_workflows.timing import CHAIN, FAN_OUT
from benchmarks.venvs import Unavailable, clean_env, ensure_venv, tail

SCRIPTS = Path(__file__).parent / "peer_workflows"
RUN_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Peer:
    """A peer orchestrator: its package pinned, the script of its two workflows, how it runs them."""

    name: str
    package: str
    version: str
    script: str
    how: str  # for the row's label

    @property
    def title(self) -> str:
        return f"{self.name} {self.version}"


# The one place the peers' versions are pinned.
PEERS = (
    Peer("Prefect", "prefect", "3.9.1", "prefect_wfs.py",
         "its own venv; flows on its temporary local server, tasks on the default task runner"),
    Peer("Dagster", "dagster", "1.13.29", "dagster_wfs.py",
         "its own venv; a job of ops run with execute_in_process, one op after another in one process"),
)


@dataclass
class PeerResult:
    """A peer's timings in seconds, or why there are none (`error`)."""

    peer: Peer
    chain: list[float] = field(default_factory=list)
    fan_out: list[float] = field(default_factory=list)
    error: str = ""


def run_peer(peer: Peer, root: Path, runs: int) -> PeerResult:
    """Install the peer if needed and time its two workflows `runs` times each (after a warm-up run)."""
    try:
        python = ensure_venv(peer.package, peer.version) / "python"
        folder = root / peer.package
        (folder / "home").mkdir(parents=True, exist_ok=True)
        # Prefect keeps its profile and its temporary server's database under PREFECT_HOME; analytics off, so
        # nothing leaves the machine; its server's start (in the untimed warm-up) may take more than Prefect's
        # 20 s on a busy machine. Dagster without DAGSTER_HOME uses an ephemeral instance in memory.
        env = {k: v for k, v in clean_env().items() if k != "DAGSTER_HOME"}
        env.update(PREFECT_HOME=str(folder / "home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                   PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
        log = folder / "output.log"
        with log.open("w") as stderr:
            try:
                done = subprocess.run([str(python), str(SCRIPTS / peer.script), str(runs)], cwd=folder, env=env,
                                      stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise Unavailable(f"{peer.script} took over {RUN_TIMEOUT:.0f} s") from None
        if done.returncode != 0:
            raise Unavailable(f"{peer.script} failed (exit {done.returncode}): {tail(log.read_text())}")
        timings = json.loads(done.stdout.strip().splitlines()[-1])
        if timings["version"] != peer.version:
            raise Unavailable(f"{peer.script} ran {peer.package} {timings['version']}, not {peer.version}")
        return PeerResult(peer, chain=timings["chain"], fan_out=timings["fan_out"])
    except (Unavailable, OSError, ValueError, KeyError, IndexError) as e:
        return PeerResult(peer, error=str(e) or type(e).__name__)


def measure_peers(root: Path, runs: int) -> list[PeerResult]:
    """Every peer, one after another (never two at once: they would share the machine's two cores)."""
    return [run_peer(peer, root, runs) for peer in PEERS]


def peer_rows(results: list[PeerResult]) -> list[Row]:
    rows = []
    for result in results:
        peer = result.peer
        if result.error:
            rows.append(Row(f"peer: {peer.title}: skipped", [], "",
                            note=f"{peer.package}=={peer.version} could not be installed or run: {result.error}"))
            continue
        note = "after a warm-up run; before each timed run the peer finishes what the last one left (not timed)"
        rows += [Row(f"peer: {peer.title} ({peer.how}), {CHAIN}-task chain", result.chain, "s", note=note),
                 Row(f"peer: {peer.title} ({peer.how}), {FAN_OUT:,}-item fan-out (map, gathered into a list)",
                     result.fan_out, "s", note=note)]
    return rows
