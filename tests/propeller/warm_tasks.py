"""Tasks that report what process they ran in, for comparing warm (forked) and cold attempts."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flytekit import current_context, task, workflow
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
