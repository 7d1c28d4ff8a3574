"""Deleting finished attempts' folders off the engine's way.

The folders are deleted where they are, by one thread at the lowest CPU priority, while no task runs: deleting
many files makes the file system slow to create the next ones, which every attempt does, so the folders of a
map's items wait until its last item ended (or until too many wait, or for too long). The server never waits
for the thread: what it has not deleted when the server stops is moved into the trash folder, which the next
start empties. A server killed first (SIGKILL, a crash) has no such chance: what it was handed is also
appended to its journal (a file per server process, in the journals folder beside the trash), and the next
start on this machine hands over again what the journals of dead servers list.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flytelite.plugins.machinery import processes

log = logging.getLogger(__name__)

# How long a sweep waits before it starts. A folder is handed over in the round that starts the finished
# attempt's successor: a sweep at once would take the CPU from that round.
SWEEP_DELAY_SECONDS = 0.02
# While tasks run, how often the sweep looks whether they all ended; and the most folders, and the longest,
# that wait for that before they are deleted anyway. On a file system that makes the files created soon after
# many were deleted slow (an ext4 without a journal skips inodes freed in the last minute or more), deleting
# while a long map runs slows every later item: its folders wait for the map's end unless there are too many.
BUSY_POLL_SECONDS = 0.1
MAX_WAITING = 50_000
MAX_WAIT_SECONDS = 600.0
# Folders deleted by one rm(1); the sweep looks again whether tasks run between two.
BATCH = 500
# The journals' folder, beside the trash.
JOURNALS = ".discarding"


class FolderCleaner:
    """Deletes the folders it is handed, in the background, while `busy()` is False (tasks run); `close` moves
    what is left into `trash`. A dead server's journal may name what is in the trash's folder and in
    `temp_root`, and paths that start with one of `prefixes`; `machine`: this machine's name, in the
    journals' names."""

    def __init__(self, trash: Path, temp_root: str, busy: Callable[[], bool] = lambda: False, *,
                 prefixes: Sequence[str] = (), machine: str = ""):
        self._trash = trash
        # The attempts' temp root, deleted once the server stops if no attempt's temp folder is left in it.
        self._temp_root = temp_root
        self._busy = busy
        self._journals = trash.parent / JOURNALS
        self._machine = machine or socket.gethostname()
        pid = os.getpid()
        self._journal = self._journals / f"{pid}-{processes.start_time(pid)}-{self._machine}"
        self._journal_fd: int | None = None
        # What a journal's path must start with: never the attempts' folder or the temp root itself.
        self._prefixes = (os.path.join(str(trash.parent), ""), os.path.join(temp_root, ""), *prefixes)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="work-dir-cleanup",
                                            initializer=_lowest_priority)
        self._lock = threading.Lock()
        # Folders to delete, since when the oldest waits, and whether a sweep is queued or running (it deletes
        # every folder handed over until it finds none, so handing one over rarely wakes the thread).
        self._doomed: list[str] = []
        self._waiting_since = 0.0
        self._sweep_queued = False
        self._closing = threading.Event()

    def start(self) -> None:
        """Empty the trash and delete what dead servers' journals list: what earlier lives of the server did not
        get to delete."""
        try:
            self._executor.submit(_empty, self._trash)
            self._executor.submit(self._take_over_journals)
        except RuntimeError:  # closed already
            pass

    def discard(self, *paths: str) -> None:
        """Delete folders (or files) in the background: deleting an attempt's unpacked code in the round would
        delay the next node, and moving it aside first would cost the round a rename."""
        with self._lock:
            if not self._doomed:
                self._waiting_since = time.monotonic()
            self._doomed.extend(paths)
            self._write_journal(paths)
            if self._sweep_queued:
                return
            self._sweep_queued = True
        try:
            self._executor.submit(self._sweep)
        except RuntimeError:  # closed: close() moved it into the trash, deleted after the next start
            pass

    def close(self) -> None:
        """Stop without waiting for the thread (deleting many folders can take a loaded machine a long while):
        what is left is moved into the trash, for the next start (a folder the thread is deleting meanwhile may
        be moved half-deleted: the next start deletes the rest)."""
        self._closing.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            doomed, self._doomed = self._doomed, []
            # What cannot be moved (the temp root on another file system) stays in the journal.
            left = [path for path in dict.fromkeys(doomed) if not _move_to_trash(path, self._trash)]
            self._close_journal(left)
        _remove_if_empty(self._temp_root)

    def _sweep(self) -> None:
        """Delete the folders handed over, while no task runs (in the cleaner thread)."""
        if self._closing.wait(SWEEP_DELAY_SECONDS):
            return  # close() moves them into the trash
        while True:
            busy = self._busy()
            with self._lock:
                if not self._doomed:
                    self._sweep_queued = False  # a folder handed over from now on queues the next sweep
                    self._clear_journal()
                    return
                due = (len(self._doomed) >= MAX_WAITING
                       or time.monotonic() - self._waiting_since >= MAX_WAIT_SECONDS)
                batch: list[str] = []
                if due or not busy:
                    batch, self._doomed = self._doomed[:BATCH], self._doomed[BATCH:]
            if not batch:
                if self._closing.wait(BUSY_POLL_SECONDS):
                    return
                continue
            _delete(batch)
            if self._closing.is_set():
                _remove_if_empty(self._temp_root)  # close() found this sweep's folders still there
                return

    # -- the journal (written, cleared and closed holding self._lock) ------------------------------------------
    def _write_journal(self, paths: Sequence[str]) -> None:
        """Append the paths to this server's journal (a path with a line break in it is not journaled)."""
        lines = "".join(f"{path}\n" for path in paths if "\n" not in path).encode()
        try:
            if self._journal_fd is None:
                self._journals.mkdir(parents=True, exist_ok=True)
                self._journal_fd = os.open(self._journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                                           0o644)
            os.write(self._journal_fd, lines)
        except OSError as e:
            log.warning("cannot journal finished attempts' folders in %s (a crash before they are deleted would "
                        "leave them): %s", self._journal, e)

    def _clear_journal(self) -> None:
        """Everything journaled was deleted."""
        if self._journal_fd is not None:
            try:
                os.ftruncate(self._journal_fd, 0)
            except OSError:
                pass

    def _close_journal(self, left: list[str]) -> None:
        """Keep the journal listing `left` for the next start, or remove it if nothing is left."""
        if self._journal_fd is None:
            return
        self._clear_journal()
        if left:
            self._write_journal(left)
        os.close(self._journal_fd)
        self._journal_fd = None
        if not left:
            try:
                os.unlink(self._journal)
            except OSError:
                pass

    def _take_over_journals(self) -> None:
        """Hand over again what the journals of this machine's dead servers list, then remove those journals (in
        the cleaner thread: a journal of a long map lists thousands of folders)."""
        try:
            journals = list(os.scandir(self._journals))
        except OSError:
            return
        for journal in journals:
            if journal.path == str(self._journal) or not self._dead(journal.name):
                continue
            try:
                with open(journal.path, "rb") as f:
                    lines = f.read().decode(errors="replace").split("\n")
            except OSError:
                continue
            # The last piece has no line break: a write the crash cut short, or nothing.
            paths = [path for path in dict.fromkeys(lines[:-1]) if self._deletable(path)]
            if paths:
                self.discard(*paths)  # journaled in this server's journal before the dead one's goes
            try:
                os.unlink(journal.path)
            except OSError:
                pass

    def _dead(self, journal: str) -> bool:
        """Whether the journal is a server's of this machine that is no longer running (another machine's
        server sharing the folder is for that machine to judge)."""
        pid, _, rest = journal.partition("-")
        started, _, machine = rest.partition("-")
        if not (pid.isdigit() and started.isdigit()) or machine != self._machine:
            return False
        return not processes.is_alive(int(pid), int(started))

    def _deletable(self, path: str) -> bool:
        """Whether a journal's line names something this cleaner may delete (a damaged journal must not name
        the attempts' folder itself, anything outside it, or the trash and journals in it)."""
        return os.path.isabs(path) and os.path.normpath(path) == path and any(
            path.startswith(prefix) and len(path) > len(prefix) and path[len(prefix)] != "." for prefix in self._prefixes)


def _empty(folder: Path) -> None:
    """Delete what is in `folder` (the trash: what an earlier life of the server did not get to delete)."""
    try:
        left = list(folder.iterdir())
    except OSError:
        return
    for path in left:
        shutil.rmtree(path, ignore_errors=True)


def _delete(paths: list[str]) -> None:
    """Delete folders with rm(1): shutil.rmtree runs Python between its system calls, holding the GIL the
    engine's rounds wait for; rm deletes beside them, in a process of its own."""
    rm = shutil.which("rm")
    if rm is None:
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)
        return
    for start in range(0, len(paths), BATCH):
        subprocess.run([rm, "-rf", "--", *paths[start:start + BATCH]], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _remove_if_empty(folder: str) -> None:
    """Delete `folder` if it is empty (the attempts' temp root: an attempt still running keeps it)."""
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _move_to_trash(path: str, trash: Path) -> bool:
    """Move the folder into the trash; False if it is there still (on another file system than the trash)."""
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(path, trash / uuid.uuid4().hex)
    except FileNotFoundError:
        pass  # gone already (or never made)
    except OSError:
        return not os.path.lexists(path)
    return True


def _lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority: deleting finished attempts' folders (many file system
    calls each) then takes only CPU that running tasks and the engine leave idle."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        pass
