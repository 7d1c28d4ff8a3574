"""The `engine:` block of flytelite's configuration: how the engine (flytelite.propeller) runs executions, and
where and how many task processes it starts on this machine."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass


@dataclass
class EngineConfig:
    # Threads that evaluate rounds. Rounds start one at a time unless the running one waits on I/O
    # (propeller/round_gate.py): more threads help only when rounds wait (agents, S3, the Kubernetes API).
    workers: int = 8
    # Seconds between resyncs of every unfinished workflow; events wake workflows sooner.
    resync_seconds: float = 5.0
    # Retries of system errors (process lost or killed), on top of the user's retries.
    max_system_retries: int = 3
    # How many nodes of an execution run at once when neither the execution, its launch plan nor the matchable
    # attributes name a max_parallelism.
    default_max_parallelism: int = 25
    # Seconds an execution's lease lasts without renewal: how long the executions of a replica that died
    # wait before another replica takes them over (propeller/leases.py). Renewed every third of it. Also the
    # lease of the scheduler's leadership (server/leadership.py), renewed every quarter of it.
    lease_seconds: float = 15.0
    # The machine this replica runs on, recorded with every task process it starts (empty: the host
    # name). A replica adopts the running task processes of a dead replica only on the same machine; on
    # another machine their attempts end as system errors and are retried. Replicas in containers that
    # share a host name but not their processes need names of their own.
    machine: str = ""
    # Fork python-task attempts from a pre-imported zygote per interpreter (see plugins/local/workers)
    # instead of starting a new interpreter each time; attempts that cannot run warm run cold.
    warm_workers: bool = True
    # Seconds a first attempt waits for its interpreter's zygote to import flytekit before running cold.
    warm_start_seconds: float = 60.0
    # How many task processes run on this machine at once, cold or warm, whatever the executions' and maps'
    # parallelism (0: 16 per processor, at most one per 64 MiB of memory; see plugins/machinery/slots.py).
    # An attempt that finds every one taken waits in QUEUED, as a pod waits for room on its node.
    max_task_processes: int = 0
    # Another name of max_task_processes, kept for the configurations that use it: it sets max_task_processes
    # when that is 0.
    warm_pool_size: int = 0
    # Seconds an attempt may wait for a busy worker of its group (the tasks of one code version; the items of
    # its map tasks) while the group has as many busy workers as processors, before it gets a process of its
    # own (0: never waits; see plugins/local/workers/zygote.py; a worker whose item ran 0.1 s is not busy).
    # Fewer processes than items in flight keep the processors' caches warm, and the server's rounds take the
    # items' news in batches meanwhile (see plugins/local/warm.py's news). An attempt sent while more of its
    # group's wait than there are processors reports QUEUED until it starts (plugins/local/warm.py's sent); one
    # that waits behind fewer counts as running, as one given to an idle worker does.
    warm_queue_seconds: float = 1.0
    # Where task attempts' folders go (their working folder with the unpacked code, and a pid file where that
    # folder can hold no attribute), each deleted after its attempt; empty: <home>/work. Their temp folders are
    # in the server's temp folder. A folder on a tmpfs (such as /dev/shm/flytelite) keeps that churn of small files off the disk: on an ext4
    # without a journal, creating a file soon after many were deleted costs the kernel a scan past each of
    # them (see the README). Tasks' files in it then take memory: leave it on the disk for tasks that write
    # large ones.
    attempts_dir: str = ""
    # Where executions show besides the database: "" (nowhere) or "kubernetes" (each execution also a
    # FlyteWorkflow object in its namespace, as on a Flyte cluster; see propeller/crd).
    state: str = ""

    def __post_init__(self) -> None:
        self.machine = self.machine or socket.gethostname()
        if self.state not in ("", "kubernetes"):
            raise ValueError(f"engine.state must be empty or 'kubernetes', not {self.state!r}")
        if self.lease_seconds <= 0:
            raise ValueError(f"engine.lease_seconds must be more than 0, not {self.lease_seconds}")
        if self.warm_pool_size < 0:
            raise ValueError(f"engine.warm_pool_size must be 0 or more, not {self.warm_pool_size}")
        if self.max_task_processes < 0:
            raise ValueError(f"engine.max_task_processes must be 0 (from the machine) or more, not "
                             f"{self.max_task_processes}")
        self.max_task_processes = self.max_task_processes or self.warm_pool_size
        self.attempts_dir = os.path.expanduser(self.attempts_dir)
        if self.attempts_dir and not os.path.isabs(self.attempts_dir):
            raise ValueError(f"engine.attempts_dir must be an absolute path, not {self.attempts_dir!r}")
        if self.warm_queue_seconds < 0:
            raise ValueError(f"engine.warm_queue_seconds must be 0 (off) or more, not {self.warm_queue_seconds}")
