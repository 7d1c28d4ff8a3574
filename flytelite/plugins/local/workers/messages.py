"""The warm workers' messages: what the server (pool.py), a zygote (zygote.py) and the zygote's workers
(child.py) tell each other, one JSON object per line over unix sockets, named by its "kind".

    server -> zygote:  Run, Kill, Retire, Drain
    zygote -> worker:  Run (the next attempt of the worker's group)
    worker -> zygote:  Done (that attempt ended cleanly; the worker waits for the next)
    zygote -> server:  Ready, Started, Failed, Exit

Standard library only, and valid on Python 3.9: the zygote and its children run in the task's
interpreter, which has flytekit but not flytelite, so zygote.py loads this file by its path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

# The extended attribute of an attempt's working folder (Run.cwd) that holds "<pid> <start time>" of the process
# running it; where the file system has no user attributes, Run.pid_file does.
PID_ATTRIBUTE = "user.flytelite.pid"


@dataclass(frozen=True)
class Run:
    """Run one attempt in a process of its own, or in a worker of `group` (the attempts that may share one).

    With `worker`, in that idle worker (whose start time is `worker_start`), which the server chose: the server
    counts the attempt as started in it and hears nothing more until its Exit."""

    id: int
    argv: list[str]
    env: dict[str, str]
    cwd: str
    log: str
    # The attempt's temp folder, and the file its pid and start time go to where `cwd` can have no PID_ATTRIBUTE.
    tmp: str
    pid_file: str
    # The interpreter's bin folder: where pyflyte-execute and the other console scripts are.
    bin_dir: str
    group: str | None = None
    worker: int | None = None
    worker_start: int | None = None


@dataclass(frozen=True)
class Kill:
    """Signal the process group of the attempt `id` while a process of the zygote runs it (`pid`, when the
    server knows it), or drop it unstarted if it still waits for a worker (answered by a Failed with `signal`)."""

    pid: int | None
    id: int
    sig: int


@dataclass(frozen=True)
class Retire:
    """End idle worker `pid` (the server no longer offers it attempts)."""

    pid: int


@dataclass(frozen=True)
class Drain:
    """Fork nothing more: end the idle workers, and exit once every child has been reaped."""


@dataclass(frozen=True)
class Done:
    """A worker's attempt `id` ended as a clean process would; the worker waits for the next."""

    id: int


@dataclass(frozen=True)
class Ready:
    """The zygote imported flytekit and waits for requests."""

    pid: int
    flytekit: str
    flytekit_file: str
    python: str
    # Forking is safe only from a process with one thread.
    threads: int
    # The folders packages are installed into, with their mtimes (None: missing), noted before any import.
    site_dirs: dict[str, int | None]


@dataclass(frozen=True)
class Started:
    """Attempt `id` runs as `pid` (a worker's pid when `reused`)."""

    id: int
    pid: int
    start_time: int | None
    reused: bool


@dataclass(frozen=True)
class Failed:
    """Attempt `id` could not be started; with `signal`, a Kill dropped it before it started."""

    id: int
    error: str
    signal: int = 0


@dataclass(frozen=True)
class Exit:
    """The attempt that ran as `pid` ended with `code` (< 0: killed by that signal, as subprocess reports);
    a worker's attempt that ended cleanly is reported with code 0 while its process lives on.

    `idle`: the worker waits for its next attempt, which only the server gives it (Run's `worker`) until it
    retires it. An Exit without `idle` for a worker that was idle says it is gone; its code is None when the
    zygote retired it to make room (an attempt the server gave it meanwhile never ran)."""

    pid: int
    code: int | None
    idle: bool = False


Message = Union[Run, Kill, Retire, Drain, Done, Ready, Started, Failed, Exit]  # noqa: UP007 - run by Python 3.9 too
_KINDS: dict[str, Any] = {cls.__name__.lower(): cls
                          for cls in (Run, Kill, Retire, Drain, Done, Ready, Started, Failed, Exit)}


def encode(message: Message) -> bytes:
    return json.dumps({"kind": type(message).__name__.lower(), **vars(message)}).encode() + b"\n"


def decode(line: bytes) -> Message:
    fields = json.loads(line)
    return _KINDS[fields.pop("kind")](**fields)


class Lines:
    """The messages in a byte stream that arrives in pieces."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> list[Message]:
        return [decode(line) for line in self.split(data)]

    def split(self, data: bytes) -> list[bytes]:
        """The complete lines so far, undecoded (what a relay passes on as it came)."""
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        return lines
