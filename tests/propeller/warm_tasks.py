"""Tasks that report what process they ran in, for comparing warm (forked) and cold attempts."""

from __future__ import annotations

import atexit
import functools
import logging
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from flytekit import LaunchPlan, current_context, map_task, task, workflow
from flytekit.interfaces import random as flyte_random


@task
def probe(tag: str) -> dict[str, str]:
    """Facts a task can observe about its process; those that must not differ warm vs cold are compared."""
    here = os.getcwd()
    return {
        "tag": tag,
        "pid": str(os.getpid()),
        "ppid": str(os.getppid()),
        "session_leader": str(os.getsid(0) == os.getpid()),
        "attempt": os.environ.get("FLYTE_ATTEMPT_NUMBER", ""),
        "execution_id": os.environ.get("FLYTE_INTERNAL_EXECUTION_ID", ""),
        "task_name": os.environ.get("FLYTE_INTERNAL_TASK_NAME", ""),
        "marker": os.environ.get("FLYTELITE_ATTEMPT", ""),
        "cwd_is_work_dir": str("/work/" in here),
        "cwd": here,
        "cwd_on_path": str(here in sys.path),
        "repo_on_path": str(any(p.rstrip("/").endswith("/main") for p in sys.path)),
        "tempdir": tempfile.gettempdir(),
        "user_tmp": str(current_context().working_directory),
        "flyte_random": str(flyte_random.random.getrandbits(64)),
        "random": str(random.random()),
        "raw_output_prefix": current_context().raw_output_prefix,
        "stdin_is_null": str(os.path.samefile("/dev/null", "/proc/self/fd/0")),
        "argv": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:2]]),
    }


@workflow
def probe_wf(tag: str) -> dict[str, str]:
    return probe(tag=tag)


@workflow
def probe_twice_wf() -> tuple[dict[str, str], dict[str, str]]:
    return probe(tag="a"), probe(tag="b")


@task
def count_through_a_manager(n: int) -> int:
    """multiprocessing.Manager() listens on a unix socket two folders below the temp folder."""
    import multiprocessing

    with multiprocessing.Manager() as manager:
        shared = manager.list()
        for i in range(n):
            shared.append(i)
        return len(shared)


@workflow
def manager_wf(n: int) -> int:
    return count_through_a_manager(n=n)


@task
def spawn_and_sleep(marker_dir: str, seconds: float) -> int:
    """Starts a subprocess of its own (a kill must reach it too), then sleeps."""
    child = subprocess.Popen(["sleep", str(seconds)])
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    (Path(marker_dir) / "spawned").write_text(f"{os.getpid()} {child.pid}\n")
    print("spawned", child.pid, flush=True)
    time.sleep(seconds)
    return 0


@workflow
def spawn_and_sleep_wf(marker_dir: str, seconds: float) -> int:
    return spawn_and_sleep(marker_dir=marker_dir, seconds=seconds)


@task
def say(word: str) -> str:
    print(f"stdout says {word}")
    print(f"stderr says {word}", file=sys.stderr)
    return word.upper()


@task
def chain_step(x: int) -> int:
    return x + 1


@workflow
def chain20_wf(x: int) -> int:
    for _ in range(20):
        x = chain_step(x=x)
    return x


@workflow
def say_wf(word: str) -> str:
    return say(word=word)


@task(environment={"PYTHONHASHSEED": "0"})
def probe_hashseed() -> int:
    return os.getppid()


@workflow
def probe_hashseed_wf() -> int:
    return probe_hashseed()


# -- map items, which warm workers run one after another in the same process ----------------------------
SEEN_BY_THIS_IMPORT: list[int] = []  # module state: every item must find it empty (a fresh import)


@task
def map_probe(x: int) -> dict[str, str]:
    SEEN_BY_THIS_IMPORT.append(x)
    left_before = os.environ.get("SET_BY_AN_ITEM", "")
    os.environ["SET_BY_AN_ITEM"] = str(x)
    cwd_was_clean = not Path("left_by_an_item").exists()
    Path("left_by_an_item").write_text(str(x))
    root_handlers, warning_filters = len(logging.root.handlers), len(warnings.filters)
    logging.root.addHandler(logging.NullHandler())
    warnings.filterwarnings("ignore", message=f"item {x}")
    print(f"item {x} on stdout")
    print(f"item {x} on stderr", file=sys.stderr)
    if x == 3:
        raise ValueError("item 3 fails")
    return {
        "x": str(x),
        "index": os.environ.get("FLYTE_K8S_ARRAY_INDEX", ""),
        "seen": ",".join(map(str, SEEN_BY_THIS_IMPORT)),
        "env_left_before": left_before,
        "cwd_was_clean": str(cwd_was_clean),
        "root_handlers": str(root_handlers),
        "warning_filters": str(warning_filters),
        "cwd_is_work_dir": str("/work/" in os.getcwd()),
        "tempdir": tempfile.gettempdir(),
        "session_leader": str(os.getsid(0) == os.getpid()),
        "pid": str(os.getpid()),
        "random": str(random.random()),
    }


@workflow
def map_probe_wf(xs: list[int]) -> list[dict[str, str] | None]:
    # Two at a time: later items find a worker that ran an earlier one waiting.
    return map_task(map_probe, concurrency=2, min_success_ratio=0.5)(x=xs)


@task
def chain_probe(x: int) -> dict[str, str]:
    """A task of its own (not map_probe) that a worker which ran map_probe may run next."""
    SEEN_BY_THIS_IMPORT.append(100 + x)
    left_before = os.environ.get("SET_BY_AN_ITEM", "")
    os.environ["SET_BY_AN_ITEM"] = str(x)
    return {"seen": ",".join(map(str, SEEN_BY_THIS_IMPORT)), "env_left_before": left_before,
            "pid": str(os.getpid()), "random": str(random.random()), "tempdir": tempfile.gettempdir()}


@task
def relay(facts: dict[str, str]) -> int:
    SEEN_BY_THIS_IMPORT.append(-1)
    return len(facts)


@workflow
def different_tasks_wf() -> tuple[dict[str, str], dict[str, str]]:
    """chain_probe, relay, chain_probe: three attempts of two tasks, one after another."""
    first = chain_probe(x=1)
    return first, chain_probe(x=relay(facts=first))


@task
def item_pid(x: int) -> str:
    return str(os.getpid())


@workflow
def two_maps_wf(xs: list[int]) -> tuple[list[dict[str, str]], list[str]]:
    """Two map tasks of this code (other tasks, other nodes' inputs), one after the other, an item at a time."""
    probes = map_task(chain_probe, concurrency=1)(x=xs)
    pids = map_task(item_pid, concurrency=1)(x=xs)
    probes >> pids
    return probes, pids


# A named launch plan made at import (flytekit keeps them in a process-wide cache): each item's fresh import
# of this module makes it again, which must not collide with the one an earlier item's import made.
map_probe_nightly = LaunchPlan.get_or_create(map_probe_wf, name="map_probe_nightly", default_inputs={"xs": [1]})


@task
def lingering(x: int, marker_dir: str) -> int:
    """Item 0 leaves a thread and an atexit hook behind: its process must end as a process would (not be reused)."""
    if x == 0:
        def later() -> None:
            time.sleep(0.3)
            (Path(marker_dir) / "thread-finished").write_text(str(os.getpid()))

        threading.Thread(target=later).start()
        atexit.register(lambda: (Path(marker_dir) / "atexit-ran").write_text(str(os.getpid())))
    return os.getpid()


@workflow
def lingering_wf(xs: list[int], marker_dir: str) -> list[int]:
    return map_task(functools.partial(lingering, marker_dir=marker_dir), concurrency=1)(x=xs)


@task
def gate(path: str) -> str:
    """Runs until the file `path` exists (what a test opens when it is ready)."""
    while not Path(path).exists():
        time.sleep(0.02)
    return path


@task
def log_setup_probe(tag: str) -> str:
    """The tag an earlier item of this worker left on flytekit's log handler ("": a handler set up for this
    item), then this item's tag on it."""
    handler = logging.getLogger("flytekit").handlers[0]
    seen = getattr(handler, "flytelite_probe", "")
    handler.flytelite_probe = tag  # type: ignore[attr-defined]  # a test's own marker
    return seen


@task
def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@task
def sleepy_item(x: int, marker_dir: str) -> int:
    """Item 1 records its pid, then sleeps (long enough for its server to stop and another to start)."""
    with open(Path(marker_dir) / "ran", "a") as f:
        f.write(f"{x} {os.getpid()}\n")
    if x == 1:
        time.sleep(2.0)
    return x * 10


@workflow
def sleepy_items_wf(xs: list[int], marker_dir: str) -> list[int]:
    return map_task(functools.partial(sleepy_item, marker_dir=marker_dir), concurrency=1)(x=xs)


@task
def timed_item(x: int, marker_dir: str) -> int:
    """Records when it ran: with one warm slot, items must not overlap."""
    started = time.time()
    time.sleep(0.3)
    with open(Path(marker_dir) / "spans", "a") as f:
        f.write(f"{started} {time.time()}\n")
    return x


@workflow
def timed_items_wf(xs: list[int], marker_dir: str) -> list[int]:
    return map_task(functools.partial(timed_item, marker_dir=marker_dir))(x=xs)


@workflow
def two_timed_wf(marker_dir: str) -> tuple[int, int]:
    return timed_item(x=1, marker_dir=marker_dir), timed_item(x=2, marker_dir=marker_dir)
