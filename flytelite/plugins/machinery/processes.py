"""Local task processes: start them in their own session, recognise them again after a restart, stop them.

A process is identified by (pid, start time from /proc/<pid>/stat), so a recycled pid is never
mistaken for our task. Every task process carries MARKER_ENV=<attempt key> in its environment, so
one started just before a crash (before its pid was persisted) can still be found and adopted.
Exit notification uses a pidfd on the event loop (works for processes that are not our children).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

MARKER_ENV = "FLYTELITE_ATTEMPT"
PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when there is no such live process."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):  # a zombie has finished running
        return None
    return int(fields[19])


def is_alive(pid: int, started: int | None) -> bool:
    return pid > 0 and started is not None and start_time(pid) == started


def marked(marker: str) -> list[tuple[int, int]]:
    """(pid, start time) of every live process whose environment carries MARKER_ENV=marker: the attempt's
    process and whatever it started."""
    needle = f"{MARKER_ENV}={marker}".encode() + b"\0"
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes() + b"\0":
                continue
        except OSError:
            continue
        started = start_time(int(entry.name))
        if started is not None:
            found.append((int(entry.name), started))
    return found


def find_by_marker(marker: str) -> tuple[int, int] | None:
    """(pid, start time) of the live session leader whose environment carries MARKER_ENV=marker."""
    best: tuple[int, int] | None = None
    for pid, started in marked(marker):
        try:
            leader = os.getsid(pid) == pid
        except OSError:
            continue
        if leader:
            return pid, started
        if best is None or started < best[1]:
            best = (pid, started)
    return best


def spawn(argv: list[str], env: dict[str, str], cwd: str, log_path: str) -> subprocess.Popen:
    """Start argv in a new session (so a kill of its group reaches its own children), output to log_path."""
    with open(log_path, "ab", buffering=0) as out:
        return subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
        )


def kill_group(pid: int, started: int | None, sig: int = signal.SIGTERM) -> bool:
    """Signal the process group led by pid, if pid is still the process we started. True if signalled."""
    if not is_alive(pid, started):
        # The leader is gone; its group may still hold children: signal it only by group id.
        try:
            os.killpg(pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        os.kill(pid, sig)
    return True


def kill(pid: int, started: int | None, sig: int) -> None:
    """Signal pid if it is still the process that started then."""
    if is_alive(pid, started):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def tail(path: str, max_bytes: int = 2000) -> str:
    """The last bytes of a log file, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def how_it_ended(code: int | None) -> str:
    """How a process ended, for error messages: its exit code, the signal that killed it, or neither known."""
    if code is None:
        return "ended"
    if code < 0:
        return f"was killed by signal {signal.Signals(-code).name}"
    return f"exited with code {code}"


def with_log_tail(message: str, log_path: str) -> str:
    """`message`, followed by the end of the process's log when there is one."""
    last = tail(log_path).strip()
    return f"{message}; the end of its log:\n{last}" if last else message


class ExitWatcher:
    """Calls back (on the event loop) when a watched process exits; registration is thread-safe."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fds: dict[int, int] = {}  # pid -> pidfd
        self.supported = hasattr(os, "pidfd_open")

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def watch(self, pid: int, started: int | None, on_exit: Callable[[], None]) -> bool:
        """Start watching; False when the process is already gone or watching is not possible."""
        if not self.supported or self._loop is None or self._loop.is_closed():
            return False
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return False
        # The pidfd now pins the process: check it is still the one we mean (pid reuse).
        if start_time(pid) != started:
            os.close(fd)
            return False
        try:
            self._loop.call_soon_threadsafe(self._register, pid, fd, on_exit)
        except RuntimeError:
            os.close(fd)
            return False
        return True

    def is_watching(self, pid: int) -> bool:
        return pid in self._fds

    def _register(self, pid: int, fd: int, on_exit: Callable[[], None]) -> None:
        loop = self._loop
        assert loop is not None, "watch() schedules this on the bound loop"
        old = self._fds.pop(pid, None)
        if old is not None:
            loop.remove_reader(old)
            os.close(old)
        self._fds[pid] = fd

        def fire() -> None:
            loop.remove_reader(fd)
            if self._fds.get(pid) == fd:
                del self._fds[pid]
            os.close(fd)
            on_exit()

        loop.add_reader(fd, fire)

    def close(self) -> None:
        for fd in self._fds.values():
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(fd)
            os.close(fd)
        self._fds.clear()
