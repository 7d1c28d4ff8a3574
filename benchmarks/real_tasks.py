"""Real-task benchmark rows: flytekit python tasks through a real flytelite server, warm workers on, then off.

Each workflow is registered and first run with `pyflyte run --remote` (that run counts), then run again
with CreateExecution. Times are the server's: an execution's created_at to its SUCCEEDED update.
- overhead per task: (100-task chain time / 100) minus the median task attempt (the task execution's
  RUNNING to SUCCEEDED, i.e. the forked or started process from start until its exit was seen);
- 100-task chain; 1,000-item map task (warm off: 100 items, since 1,000 cold processes take ~15 min);
- a 10,000-item map task, once, on the warm server (a minute on this machine);
- acceptance latency: CreateExecution sent (client clock) to the first task node RUNNING (server clock,
  same machine);
- cache hit: a cached 1-task workflow run again with the same input: its node's QUEUED to SUCCEEDED;
- hello world: `pyflyte run --remote` to SUCCEEDED (client clock), each followed by `pyflyte run` (local)
  of the same file, both from a venv of flytekit alone (benchmarks/venvs.py: what a Flyte user installs to reach
  a cluster), and both again from flytelite's own venv, which holds the test suite's extras.
Baselines: flytekit's local execution of the same workflows (in this process), warm workers off, the
peers' figures for the same two workflows when the peers section ran before (benchmarks/peers.py),
for the map task flytekit's own cost of its items without flytelite (benchmarks/map_floor.py), and for the
chain and the map the same server with its home on tmpfs (what the disk's file creation costs), and for the
map a server with engine.warm_queue_seconds off (on by default: a process per item in flight), on the disk
and on tmpfs, and a server whose attempts' folders alone are on tmpfs (engine.attempts_dir), with and
without the queue.
The goals are issue 16's (ahead of Prefect's and Dagster's figures measured on this machine).
"""

from __future__ import annotations

import importlib.metadata
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flyteidl.core import catalog_pb2, identifier_pb2, literals_pb2

from benchmarks.common import TMPFS_BASELINE, D, P, Row, baseline, integer, integers, on_tmpfs, timed
from benchmarks.peers import PeerResult
from benchmarks.server_client import BenchServer, execution_seconds, local_pyflyte_run, seconds
from benchmarks.venvs import Unavailable, ensure_venv
from benchmarks.watchers import ProcessSampler, Watcher
from benchmarks.workflows import real_wfs
from flytelite.plugins.machinery.slots import machine_slots

WARM_OFF = "engine:\n  warm_workers: false\n"
QUEUE_OFF = "  warm_queue_seconds: 0\n"  # a line of the engine section
MAP_ITEMS = 1000
COLD_MAP_ITEMS = 100
BIG_MAP_ITEMS = 10_000
# How often the watched chain's client polls (FlyteRemote.wait with sync_nodes, as `pyflyte run --wait`): as
# often as `pyflyte run --wait --poll-interval` can (whole seconds; its default is 30 s), and ten times as often.
WATCH_SECONDS = (1.0, 0.1)
# Whatever the section's runs: the pairs of the watched chain's rows (per interval) and the default server's map
# runs (each after a floor run). Their goals judge ratios finer than the spread of one run from the next.
WATCH_PAIRS = 10
GOAL_MAP_RUNS = 5


@dataclass
class Watched:
    """The chain polled by a client every `interval` seconds: each run's time, the polls that client had started
    when the run ended, and the server's CPU seconds from the run's creation to its end; and the same chain
    unwatched just before each watched run (its time and the server's CPU seconds)."""

    interval: float
    times: list[float] = field(default_factory=list)
    polls: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    unwatched: list[float] = field(default_factory=list)
    unwatched_cpu: list[float] = field(default_factory=list)


@dataclass
class Measured:
    """One server mode's measurements (lists of seconds)."""

    chain: list[float] = field(default_factory=list)
    # The server's CPU seconds over each chain run that CreateExecution started (not pyflyte's first).
    chain_cpu: list[float] = field(default_factory=list)
    attempts: list[float] = field(default_factory=list)
    map: list[float] = field(default_factory=list)
    # The server's CPU seconds over each default map run.
    map_cpu: list[float] = field(default_factory=list)
    big_map: list[float] = field(default_factory=list)
    # flytekit's floor for the same items (map_floor.py), each run just before a default map's run (floors).
    floor: list[float] = field(default_factory=list)
    big_floor: list[float] = field(default_factory=list)
    # The chain while a client polls it as `pyflyte run --wait` does, at each of WATCH_SECONDS.
    watched: list[Watched] = field(default_factory=list)
    # The map (and the big one) with unbounded concurrency, and the most task processes (the zygote's and
    # its workers') and their PSS seen at once during the maps' runs.
    unbounded_map: list[float] = field(default_factory=list)
    unbounded_big_map: list[float] = field(default_factory=list)
    peak_processes: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    hit: list[float] = field(default_factory=list)
    miss: list[float] = field(default_factory=list)
    # Hello world's `pyflyte run --remote` and, each right after one of them, `pyflyte run` (local); then the
    # same from flytelite's own venv, when asked for (real_rows: the warm server's, beside a client venv's).
    hello: list[float] = field(default_factory=list)
    hello_local: list[float] = field(default_factory=list)
    hello_dev: list[float] = field(default_factory=list)
    hello_dev_local: list[float] = field(default_factory=list)
    # After the runs, 10 s of nothing to do: the server's CPU seconds, its threads' wake-ups per second, RSS.
    idle_cpu: list[float] = field(default_factory=list)
    idle_wakeups: list[float] = field(default_factory=list)
    idle_rss: list[float] = field(default_factory=list)

    def overhead(self) -> list[float]:
        """Per chain run: time per task minus the median attempt."""
        attempt = statistics.median(self.attempts)
        return [t / real_wfs.CHAIN - attempt for t in self.chain]


def measure(folder: Path, config: str, runs: int, map_items: int, map_runs: int, latency_runs: int = 0,
            cache_runs: int = 0, chain_and_map_only: bool = False, client: Path | None = None,
            hello_from_own_venv: bool = False, big_map_items: int = 0, watch_pairs: int = 0,
            unbounded: bool = False, floors: bool = False) -> Measured:
    """The rows' measurements on one server; `client` is the bin folder of the venv hello world's pyflyte
    runs from (see real_rows), else flytelite's venv, from which `hello_from_own_venv` runs it again;
    `big_map_items` (if not 0) runs the map once more with that many items; `watch_pairs` (if not 0) runs the
    chain that many times more polled by a client, each after an unwatched run; `unbounded` runs the maps again
    with unbounded concurrency; `floors` measures flytekit's floor for each map run that CreateExecution starts,
    just before it."""
    m = Measured()
    with BenchServer(folder, config) as server:
        # The chain: pyflyte registers and runs it; further runs reuse its launch plan.
        name = server.pyflyte_run("real_wfs.py", "real_chain")
        execution = server.wait(name, poll=0.05)
        lp = execution.spec.launch_plan
        for i in range(runs):
            if i:
                cpu = server.cpu_seconds()
                execution = server.wait(server.create(lp, {"x": integer(0)}), poll=0.05)
                m.chain_cpu.append(server.cpu_seconds() - cpu)
            m.chain.append(execution_seconds(execution))
            m.attempts += [seconds(t.closure.duration) for node in server.nodes(execution.id.name)
                           for t in server.task_attempts(node)]
        if watch_pairs:
            m.watched = [_watched(server, lp, watch_pairs, interval) for interval in WATCH_SECONDS]
        with ProcessSampler(server.server.home) as sampler:
            _maps(server, m, map_items, map_runs, big_map_items, unbounded, floors)
        m.peak_processes, m.peak_mib = [sampler.peak_processes], [sampler.peak_mib]
        if chain_and_map_only:
            return m
        m.hello, m.hello_local, lp = _hello(server, client, folder / "local")
        if hello_from_own_venv:
            m.hello_dev, m.hello_dev_local, _ = _hello(server, None, folder / "local")
        m.latency = _latencies(server, lp, latency_runs)
        m.miss, m.hit = _cache_hits(server, cache_runs)
        m.idle_cpu, m.idle_wakeups, m.idle_rss = _idle(server)
    return m


def _watched(server: BenchServer, lp: identifier_pb2.Identifier, runs: int, interval: float) -> Watched:
    """The chain `runs` times, each polled every `interval` seconds by a Watcher from its creation until done,
    and each right after the same chain unwatched: a machine's speed can drift over minutes, so each watched run
    is compared with one made under the same conditions rather than with the chain's runs minutes before."""
    watched = Watched(interval)
    for _ in range(runs):
        cpu = server.cpu_seconds()
        execution = server.wait(server.create(lp, {"x": integer(0)}), poll=0.05)
        watched.unwatched_cpu.append(server.cpu_seconds() - cpu)
        watched.unwatched.append(execution_seconds(execution))
        cpu = server.cpu_seconds()
        name = server.create(lp, {"x": integer(0)})
        watcher = Watcher(server.server.config_path, name, interval, P, D)
        watcher.start()
        execution = server.wait(name, poll=0.05)
        watched.cpu.append(server.cpu_seconds() - cpu)
        watched.polls.append(watcher.polls)
        watcher.join()
        if watcher.error is not None:
            raise RuntimeError(f"the client watching {name} failed: {watcher.error!r}")
        watched.times.append(execution_seconds(execution))
    return watched


def _maps(server: BenchServer, m: Measured, items: int, runs: int, big_items: int, unbounded: bool,
          floors: bool) -> None:
    """The map `runs` times (the first registered and run by pyflyte), then once with `big_items` (if not 0);
    with `unbounded`, each run followed by the same with unbounded concurrency, so that both find the machine
    alike (a run after a large one pays for the deletion of its folders). With `floors`, flytekit's floor for
    the same items runs just before each default run but the first, once the last run's folders were deleted:
    each finds the file system as the one before it left it (on some disks creating files is slow for a minute
    after many were deleted), and the two are never minutes apart."""
    plans = {}
    for i in range(runs):
        for workflow, times in (("real_map", m.map), ("real_map_unbounded", m.unbounded_map))[:2 if unbounded else 1]:
            if i == 0:
                execution = server.wait(server.pyflyte_run("real_wfs.py", workflow, "--xs", str(list(range(items)))),
                                        poll=0.1)
                plans[workflow] = execution.spec.launch_plan
            else:
                if floors and workflow == "real_map":
                    _settled(server.server.home / "work")
                    m.floor.append(map_floor_seconds(items))
                cpu = server.cpu_seconds()
                execution = server.wait(server.create(plans[workflow], {"xs": integers(list(range(items)))}),
                                        poll=0.1)
                if workflow == "real_map":
                    m.map_cpu.append(server.cpu_seconds() - cpu)
            times.append(execution_seconds(execution))
    if big_items:
        big = integers(list(range(big_items)))
        for workflow, times in (("real_map", m.big_map), ("real_map_unbounded", m.unbounded_big_map))[
                :2 if unbounded else 1]:
            _settled(server.server.home / "work")
            if floors and workflow == "real_map":
                m.big_floor.append(map_floor_seconds(big_items))
            times.append(execution_seconds(server.wait(server.create(plans[workflow], {"xs": big}), poll=0.2)))


SETTLE_SECONDS = 300.0


def _settled(attempts: Path) -> None:
    """Wait (up to SETTLE_SECONDS) until the finished attempts' folders were deleted: a large run started while
    10,000 of them are deleted in the background pays for it."""
    def busy() -> bool:
        for run in os.scandir(attempts):
            try:
                if run.is_dir() and not run.name.startswith(".") and any(os.scandir(run)):
                    return True
            except FileNotFoundError:
                pass  # deleted meanwhile
        return False

    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline and busy():
        time.sleep(0.5)


def map_floor_seconds(items: int) -> float:
    """benchmarks/map_floor.py in a process of its own (it forks: not this one, which holds gRPC channels)."""
    root = Path(__file__).parent.parent
    out = subprocess.run([sys.executable, "-m", "benchmarks.map_floor", str(items)], cwd=root, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(f"benchmarks.map_floor failed:\n{out.stdout}\n{out.stderr}")
    return float(out.stdout.split()[-1])


IDLE_SECONDS = 10.0


def _idle(server: BenchServer) -> tuple[list[float], list[float], list[float]]:
    """The server doing nothing for IDLE_SECONDS (after a second to settle): its CPU time (user + system),
    its threads' context switches per second (each a wake-up) and its resident memory."""
    pid = server.pid

    def switches() -> int:
        total = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        return total

    time.sleep(1.0)
    cpu0, switches0 = server.cpu_seconds(), switches()
    time.sleep(IDLE_SECONDS)
    cpu1, switches1 = server.cpu_seconds(), switches()
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return [cpu1 - cpu0], [(switches1 - switches0) / IDLE_SECONDS], [rss / 1024]


HELLO_RUNS = 5


def _hello(server: BenchServer, client: Path | None, local: Path
           ) -> tuple[list[float], list[float], identifier_pb2.Identifier]:
    """`pyflyte run --remote` of hello world to SUCCEEDED, each followed by `pyflyte run` (local) of the same
    file in the folder `local`, HELLO_RUNS times: pairs, so that both see the machine as it is at the time
    (the first remote run registers, the others find the same version registered). The two lists of
    times and the launch plan."""
    remote, local_times = [], []
    for _ in range(HELLO_RUNS):
        started = time.perf_counter()
        lp = server.wait(server.pyflyte_run("hello.py", "hello_wf", client=client)).spec.launch_plan
        remote.append(time.perf_counter() - started)
        local_times.append(timed(lambda: local_pyflyte_run(local, "hello.py", "hello_wf", client=client)))
    return remote, local_times, lp


def _latencies(server: BenchServer, lp: identifier_pb2.Identifier, runs: int) -> list[float]:
    """CreateExecution of hello world's launch plan `lp` sent, to its node RUNNING, `runs` times."""
    latencies = []
    for _ in range(runs):
        sent = time.time()
        name = server.create(lp, {"name": literals_pb2.Literal(scalar=literals_pb2.Scalar(
            primitive=literals_pb2.Primitive(string_value="bench")))})
        server.wait(name)
        node = next(n for n in server.nodes(name) if n.id.node_id == "n0")
        latencies.append(seconds(node.closure.started_at) - sent)
    return latencies


def _cache_hits(server: BenchServer, runs: int) -> tuple[list[float], list[float]]:
    """Node QUEUED to SUCCEEDED of a first (miss) run, then of `runs` cache hits."""
    x = int(time.time())  # a value no earlier benchmark cached
    name = server.pyflyte_run("cached.py", "cached_wf", "--x", str(x))
    lp = server.wait(name).spec.launch_plan

    def node_seconds(execution_name: str, status: int) -> float:
        node = next(n for n in server.nodes(execution_name) if n.id.node_id == "n0")
        got = node.closure.task_node_metadata.cache_status
        assert got == status, f"node n0 of {execution_name}: cache status {catalog_pb2.CatalogCacheStatus.Name(got)}"
        return seconds(node.closure.updated_at) - seconds(node.closure.created_at)

    miss = [node_seconds(name, catalog_pb2.CACHE_POPULATED)]
    hits = []
    for _ in range(runs):
        name = server.create(lp, {"x": integer(x)})
        server.wait(name)
        hits.append(node_seconds(name, catalog_pb2.CACHE_HIT))
    return miss, hits


def _client() -> tuple[Path | None, str]:
    """The bin folder of a venv with flytekit alone, at the version flytelite is tested with (what a Flyte user
    installs to reach a cluster), for hello world's two runs; None and why, when it cannot be installed."""
    version = importlib.metadata.version("flytekit")
    try:
        return ensure_venv("flytekit", version), f"both runs from a venv of flytekit {version} alone"
    except Unavailable as e:
        return None, f"both runs from flytelite's venv (a venv of flytekit {version} alone: {e})"


def times(values: list[float], base: list[float]) -> str:
    return f"{statistics.median(values) / statistics.median(base):.2f}x"


def real_rows(root: Path, runs: int, local_runs: int, peers: Sequence[PeerResult] = ()) -> list[Row]:
    """The real-task rows; `peers` (measured earlier in the run) add their chain and fan-out as baselines."""
    client, client_note = _client()
    warm = measure(root / "warm", "", runs=runs, map_items=MAP_ITEMS, map_runs=max(runs, GOAL_MAP_RUNS),
                   latency_runs=10, cache_runs=5, client=client, hello_from_own_venv=client is not None,
                   big_map_items=BIG_MAP_ITEMS, watch_pairs=max(runs, WATCH_PAIRS), unbounded=True, floors=True)
    cold = measure(root / "cold", WARM_OFF, runs=1, map_items=COLD_MAP_ITEMS, map_runs=1, latency_runs=3,
                   cache_runs=1, client=client)
    local_chain = [timed(lambda: real_wfs.real_chain(x=0)) for _ in range(local_runs)]
    local_map = [timed(lambda: real_wfs.real_map(xs=list(range(MAP_ITEMS)))) for _ in range(local_runs)]
    floor, big_floor = warm.floor, warm.big_floor
    # The chain and the map again, the server's home (blobs, attempts' folders and temp folders) on tmpfs.
    shm = on_tmpfs(lambda tmp: measure(tmp, "", runs=runs, map_items=MAP_ITEMS, map_runs=runs,
                                       chain_and_map_only=True))

    def map_again(folder: Path, engine: str) -> Measured:
        return measure(folder, f"engine:\n{engine}" if engine else "", runs=runs, map_items=MAP_ITEMS,
                       map_runs=runs, chain_and_map_only=True)

    # The map again with a process of its own per item in flight (the home on the disk, then on tmpfs), and
    # with only the attempts' folders on tmpfs (engine.attempts_dir).
    queue = "engine.warm_queue_seconds: 0"
    variants = [
        (queue, map_again(root / "unqueued", QUEUE_OFF)),
        (f"{queue}, home on tmpfs", on_tmpfs(lambda tmp: map_again(tmp, QUEUE_OFF))),
        ("engine.attempts_dir on tmpfs", on_tmpfs(lambda tmp: map_again(root / "attempts",
                                                                        f"  attempts_dir: {tmp}\n"))),
        (f"engine.attempts_dir on tmpfs and {queue}",
         on_tmpfs(lambda tmp: map_again(root / "attempts_unqueued", f"  attempts_dir: {tmp}\n{QUEUE_OFF}"))),
    ]

    def tmpfs_baseline(values: Callable[[Measured], list[float]], unit: str) -> list[str]:
        return [baseline(TMPFS_BASELINE, values(shm), unit)] if shm is not None else []

    map_variants = [baseline(label, m.map, "s") for label, m in variants if m is not None]

    attempt, cold_attempt = statistics.median(warm.attempts), statistics.median(cold.attempts)
    slots_note = (f"each run right after a default one; at most {warm.peak_processes[0]} processes (zygote and "
                  f"workers) and {warm.peak_mib[0]:,.0f} MiB (their PSS) at once over the maps' runs, default and "
                  f"unbounded, {BIG_MAP_ITEMS:,}-item ones included; {machine_slots()} task slots "
                  "(engine.max_task_processes from the machine)")
    cold_map_note = f"{COLD_MAP_ITEMS} items, not {MAP_ITEMS:,}: cold processes take ~1.6 s each"

    def ratio(remote: list[float], local: list[float]) -> str:
        return f"{statistics.median(remote) / statistics.median(local):.3f}x the local run"

    dev_hello = [baseline("`pyflyte run --remote` from flytelite's venv", warm.hello_dev, "s",
                          f"{ratio(warm.hello_dev, warm.hello_dev_local)}; that venv holds the test suite's "
                          "pandas and pyarrow, which flytekit's packaging (--copy auto) imports"),
                 baseline("`pyflyte run` (local) from flytelite's venv", warm.hello_dev_local, "s")
                 ] if client is not None else []
    return [
        Row("real tasks: flytelite overhead per task, warm workers (100-task chain)", warm.overhead(), "ms",
            goal="< 2 ms", note=f"chain time / 100 minus the median attempt ({attempt * 1000:.0f} ms, "
                                  "process start to exit seen)",
            baselines=[baseline("warm workers off", cold.overhead(), "ms",
                                f"median attempt {cold_attempt * 1000:,.0f} ms"),
                       *tmpfs_baseline(Measured.overhead, "ms")]).check("<", 0.002),
        Row(f"real tasks: {real_wfs.CHAIN}-task chain", warm.chain, "s", goal="< 1.0 s",
            baselines=[baseline("flytekit local", local_chain, "s"),
                       baseline("warm workers off", cold.chain, "s"), *tmpfs_baseline(lambda m: m.chain, "s"),
                       *[baseline(p.peer.title, p.chain, "s") for p in peers if not p.error]]).check("<", 1.0),
        Row(f"real tasks: {MAP_ITEMS:,}-item map_task", warm.map, "s", goal="< 2.0 s",
            note=f"the server's CPU {statistics.median(warm.map_cpu) / MAP_ITEMS * 1000:.2f} ms per item "
                 f"({times(warm.map, floor)} flytekit's floor)",
            baselines=[baseline("flytekit local", local_map, "s"),
                       baseline("flytekit's pyflyte-map-execute alone, no server", floor, "s",
                                f"items one after another in {os.cpu_count()} processes, each with a fresh "
                                "import of the task's module; each run just before one of flytelite's"),
                       baseline("warm workers off", cold.map, "s", cold_map_note),
                       *tmpfs_baseline(lambda m: m.map, "s"), *map_variants,
                       *[baseline(p.peer.title, p.fan_out, "s") for p in peers if not p.error]]).check("<", 2.0),
        Row(f"real tasks: {MAP_ITEMS:,}-item map_task, unbounded concurrency (concurrency=0)", warm.unbounded_map,
            "s", goal="<= 1.2x the default concurrency",
            note=f"{times(warm.unbounded_map, warm.map)} the default; {slots_note}",
            baselines=[baseline("default concurrency", warm.map, "s"),
                       baseline("flytekit's pyflyte-map-execute alone, no server", floor, "s",
                                f"the default is {times(warm.map, floor)} it")]
            ).check("<=", 1.2 * statistics.median(warm.map)),
        Row(f"real tasks: {BIG_MAP_ITEMS:,}-item map_task", warm.big_map, "s", goal="< 15 s",
            note="one run, on the warm server of the rows above; 25 items at once (Flyte's default max parallelism); "
                 f"{times(warm.big_map, big_floor)} flytekit's floor",
            baselines=[baseline("flytekit's pyflyte-map-execute alone, no server", big_floor, "s")]
            ).check("<", 15.0),
        Row(f"real tasks: {BIG_MAP_ITEMS:,}-item map_task, unbounded concurrency", warm.unbounded_big_map, "s",
            goal="<= 1.2x the default concurrency",
            note=f"one run; {times(warm.unbounded_big_map, warm.big_map)} the default, "
                 f"{times(warm.unbounded_big_map, big_floor)} flytekit's floor",
            baselines=[baseline("default concurrency", warm.big_map, "s")]
            ).check("<=", 1.2 * statistics.median(warm.big_map)),
        *[_watched_row(w, peers) for w in warm.watched],
        Row("acceptance latency: CreateExecution to first node RUNNING", warm.latency, "ms", goal="< 50 ms",
            baselines=[baseline("warm workers off", cold.latency, "ms")]).check("<", 0.050),
        Row("hello world: `pyflyte run --remote` (registration included) to SUCCEEDED", warm.hello, "s",
            goal="<= 1.2x `pyflyte run` (local)", note=f"{ratio(warm.hello, warm.hello_local)}; {client_note}",
            baselines=[baseline("`pyflyte run` (local) of the same file, each right after a remote run",
                                warm.hello_local, "s"),
                       baseline("warm workers off", cold.hello, "s"), *dev_hello]
            ).check("<=", 1.2 * statistics.median(warm.hello_local)),
        Row("cache hit: node QUEUED to SUCCEEDED", warm.hit, "ms",
            baselines=[baseline("the same node's cache miss (task runs, warm)", warm.miss, "ms")]),
        Row(f"idle server: CPU time in {IDLE_SECONDS:.0f} s with nothing to run", warm.idle_cpu, "s",
            note=f"{warm.idle_wakeups[0]:.0f} thread wake-ups (context switches) per second; "
                 f"resident memory {warm.idle_rss[0]:.0f} MiB"),
    ]


def _watched_row(w: Watched, peers: Sequence[PeerResult]) -> Row:
    """The chain watched every `w.interval` s; the goal is judged at the intervals `pyflyte run --wait` can poll."""
    polls, cpu, unwatched_cpu = (statistics.median(v) for v in (w.polls, w.cpu, w.unwatched_cpu))
    row = Row(f"real tasks: {real_wfs.CHAIN}-task chain watched by a client polling it every {w.interval:g} s as "
              "`pyflyte run --wait` does", w.times, "s", goal="<= 1.1x unwatched" if w.interval >= 1 else "",
              note=f"FlyteRemote.wait(sync_nodes=True), {polls:.0f} polls started before the run ended; "
                   f"{times(w.times, w.unwatched)} the same chain unwatched, each run just before a watched one; "
                   f"the server's CPU {cpu:.2f} s per run, "
                   f"{unwatched_cpu:.2f} s unwatched: {(cpu - unwatched_cpu) / max(polls, 1) * 1000:.0f} ms per poll",
              baselines=[baseline("unwatched, each just before a watched run", w.unwatched, "s"),
                         *[baseline(p.peer.title, p.chain, "s") for p in peers if not p.error]])
    return row.check("<=", 1.1 * statistics.median(w.unwatched)) if w.interval >= 1 else row
