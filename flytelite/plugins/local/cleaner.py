"""Deleting finished attempts' folders off the engine's way.

The folders are deleted where they are, by one thread at the lowest CPU priority, in sweeps: a sweep waits a
little and then deletes every folder handed over until it started. The server never waits for it: what it has
not deleted when the server stops is moved into the trash folder, which the next start empties.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# How long a sweep waits before it starts. A folder is handed over in the round that starts the finished
# attempt's successor: a sweep at once would take the CPU from that round; a little later it runs while the
# successor's task does, with what the rounds of the meantime handed over.
SWEEP_DELAY_SECONDS = 0.02


class FolderCleaner:
    """Deletes the folders it is handed, in the background; `close` moves what is left into `trash`."""

    def __init__(self, trash: Path, temp_root: str):
        self._trash = trash
        # The attempts' temp root, deleted once the server stops if no attempt's temp folder is left in it.
        self._temp_root = temp_root
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="work-dir-cleanup",
                                            initializer=_lowest_priority)
        self._lock = threading.Lock()
        # Folders to delete, and whether a sweep is queued and has not started yet (one covers every folder
        # handed over before it starts, so handing one over rarely wakes the thread).
        self._doomed: list[str] = []
        self._sweep_queued = False
        self._closing = threading.Event()

    def start(self) -> None:
        """Empty the trash: what an earlier life of the server did not get to delete."""
        try:
            self._executor.submit(_empty, self._trash)
        except RuntimeError:  # closed already
            pass

    def discard(self, path: str) -> None:
        """Delete a folder (or a file) in the background: deleting an attempt's unpacked code in the round would delay the
        next node, and moving it aside first would cost the round a rename."""
        with self._lock:
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
        """Delete the folders handed over so far (in the cleaner thread)."""
        if self._closing.wait(SWEEP_DELAY_SECONDS):
            return  # close() moves them into the trash
        with self._lock:
            doomed, self._doomed = self._doomed, []
            self._sweep_queued = False  # a folder handed over from now on queues the next sweep
        _delete(doomed)
        if self._closing.is_set():
            _remove_if_empty(self._temp_root)  # close() found this sweep's folders still there


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
    for start in range(0, len(paths), 500):
        subprocess.run([rm, "-rf", "--", *paths[start:start + 500]], stdin=subprocess.DEVNULL,
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
