"""The cold launch path of the local-process plugin: an attempt's process started by this server as a new
interpreter (a session of its own, so that its whole group can be killed), and the watch on a process that no
zygote reports on: one started cold, or one found running after a restart and adopted.

Used for what the warm path (warm.py) does not take: warm workers off, a command a zygote cannot fork, or no
usable zygote yet.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from flytelite.plugins.machinery import processes


def spawn(argv: list[str], env: dict[str, str], cwd: str, log_path: str, tmp: str) -> subprocess.Popen:
    """Start the attempt's process with `tmp` (made here) as its TMPDIR."""
    os.makedirs(tmp, exist_ok=True)
    return processes.spawn(argv, {**env, "TMPDIR": tmp}, cwd, log_path)


def watch(watcher: processes.ExitWatcher, pid: int, started: int | None, on_exit: Callable[[], None],
          wake: Callable[[], None]) -> bool:
    """Have `on_exit` called once the process ends; False when that cannot be known (no pidfd support) and
    the process must be polled. A process gone already calls `wake` (the execution's next round sees it)."""
    if watcher.is_watching(pid):
        return True
    if watcher.watch(pid, started, on_exit):
        return True
    if not processes.is_alive(pid, started):
        wake()
        return True
    return False
