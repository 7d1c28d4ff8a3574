"""Task slots: how many task processes run on this machine at once, whatever the executions ask for.

As a Kubernetes node keeps pods pending until it has room, the local-process plugin starts an attempt's process
(cold, or sent to a warm zygote) only once it holds a slot; the others stay QUEUED, and a freed slot wakes
them. A map with unbounded concurrency therefore runs as many items at once as the machine has slots. A holder
that only waits on others (a Flyte 2 parent's process waiting on its children) lends its slot to them until it
works again, so that parents waiting on children can never take every slot from the children.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable

# engine.max_task_processes 0 takes this many slots per processor, at most one per MEMORY_PER_PROCESS of the
# machine's memory (a task's process, its Python and flytekit, takes tens of MB), and at least MIN_SLOTS.
SLOTS_PER_PROCESSOR = 16
MEMORY_PER_PROCESS = 64 << 20
MIN_SLOTS = 4


def machine_slots() -> int:
    """The slots of this machine (see SLOTS_PER_PROCESSOR)."""
    by_processors = SLOTS_PER_PROCESSOR * len(os.sched_getaffinity(0))
    memory = machine_memory()
    by_memory = memory // MEMORY_PER_PROCESS if memory else by_processors
    return max(MIN_SLOTS, min(by_processors, by_memory))


def machine_memory() -> int | None:
    """The memory this process may use: the machine's, or its cgroup's limit when lower (a container)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        memory = None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
    except OSError:
        limit = "max"
    if limit.isdigit():
        memory = min(memory, int(limit)) if memory else int(limit)
    return memory


class TaskSlots:
    """At most `size` holders (attempts, by any hashable name) at once; a holder that found none free is called
    back once one frees (once per `waiter`: a map's items share their execution's wake-up)."""

    def __init__(self, size: int):
        self.size = size
        self._holders: set[Hashable] = set()
        # Holders whose processes run but wait on others, their slots lent (see lend).
        self._lent: set[Hashable] = set()
        self._waiting: dict[Hashable, Callable[[], None]] = {}
        self._lock = threading.Lock()

    @property
    def reason(self) -> str:
        return f"waiting for a task slot: all {self.size} (engine.max_task_processes) run tasks"

    def take(self, holder: Hashable, on_room: Callable[[], None], waiter: Hashable = None) -> bool:
        """Take a slot for `holder` (True; also when it holds one already), or keep `on_room` for the next
        release (False)."""
        with self._lock:
            if holder in self._holders:
                return True
            if len(self._holders) >= self.size:
                self._waiting.setdefault(on_room if waiter is None else waiter, on_room)
                return False
            self._holders.add(holder)
            return True

    def release(self, holder: Hashable) -> None:
        """Free the holder's slot, if it holds one: every waiter is woken and tries again (as many as there are
        free slots get one, the others wait anew)."""
        with self._lock:
            self._lent.discard(holder)
            if holder not in self._holders:
                return
            self._holders.remove(holder)
        self._wake()

    def lend(self, holder: Hashable) -> None:
        """The holder's process waits on others: its slot is free for them (waiters are woken) until `reclaim`."""
        with self._lock:
            if holder not in self._holders:
                return
            self._holders.remove(holder)
            self._lent.add(holder)
        self._wake()

    def reclaim(self, holder: Hashable) -> None:
        """The holder's process works again: it holds a slot again, beyond the size if need be (it is running)."""
        with self._lock:
            if holder in self._lent:
                self._lent.remove(holder)
                self._holders.add(holder)

    def _wake(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for on_room in waiting.values():
            on_room()

    def in_use(self) -> int:
        with self._lock:
            return len(self._holders)
