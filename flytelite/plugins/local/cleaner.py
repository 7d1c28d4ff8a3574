"""Deleting finished attempts' folders off the engine's way.

The folders are deleted where they are, by one thread at the lowest CPU priority, while no task runs: deleting
many files makes the file system slow to create the next ones, which every attempt does, so the folders of a
map's items wait until its last item ended (or until too many wait, or for too long). The server never waits
for the thread: what it has not deleted when the server stops is moved into the trash folder, which the next
start empties.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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


class FolderCleaner:
    """Deletes the folders it is handed, in the background, while `busy()` is False (tasks run); `close` moves
    what is left into `trash`."""

    def __init__(self, trash: Path, temp_root: str, busy: Callable[[], bool] = lambda: False):
        self._trash = trash
        # The attempts' temp root, deleted once the server stops if no attempt's temp folder is left in it.
        self._temp_root = temp_root
        self._busy = busy
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
        """Empty the trash: what an earlier life of the server did not get to delete."""
        try:
            self._executor.submit(_empty, self._trash)
        except RuntimeError:  # closed already
            pass

    def discard(self, path: str) -> None:
        """Delete a folder (or a file) in the background: deleting an attempt's unpacked code in the round would
        delay the next node, and moving it aside first would cost the round a rename."""
        with self._lock:
            if not self._doomed:
                self._waiting_since = time.monotonic()
            self._doomed.append(path)
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
        for path in doomed:
            _move_to_trash(path, self._trash)
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


def _move_to_trash(path: str, trash: Path) -> None:
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(path, trash / uuid.uuid4().hex)
    except OSError:
        pass  # gone already (or never made)


def _lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority: deleting finished attempts' folders (many file system
    calls each) then takes only CPU that running tasks and the engine leave idle."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        pass
