"""What the local-process plugin (and the plugins built on it) remembers of one attempt, and the versions of
the QUEUED phase it reports while an attempt waits."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from flytelite.plugins.machinery.core import PluginState

# Versions of an attempt's QUEUED phase, in the order they can follow each other: waiting for a task slot
# (engine.max_task_processes), then held by a zygote for a busy warm worker.
ROOM_VERSION = 1
HELD_VERSION = 2


class AttemptStatus(str, Enum):
    """Where an attempt's process is in its life (persisted by value in the plugin state)."""

    LAUNCHING = "launching"  # recorded, maybe started: a restart looks for the process before starting one
    RUNNING = "running"      # started; pid and start_time say which process
    DONE = "done"            # the process is gone: its files decide
    ABORTED = "aborted"


@dataclass
class AttemptState(PluginState):
    """What the plugin remembers of one attempt (persisted by the engine; see PluginState)."""

    status: AttemptStatus | None = None
    # Names the attempt's process (an environment variable) so that it can be found after a restart.
    marker: str = ""
    # The machine that started the process (None: recorded before machines were, so this one).
    machine: str | None = None
    output_prefix: str = ""
    log_path: str = ""
    work_dir: str = ""
    pid: int | None = None
    start_time: int | None = None
    # Found running after a restart rather than started by this server.
    adopted: bool = False
    exit_code: int | None = None

    def __post_init__(self) -> None:
        if self.status is not None:
            self.status = AttemptStatus(self.status)
