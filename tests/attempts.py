"""The processes of an execution's (or a Flyte 2 run's) attempts on this machine, found by the marker each carries
in its environment (plugins/machinery/processes.py)."""

from __future__ import annotations

from pathlib import Path

from flytelite.plugins.machinery.processes import MARKER_ENV


def attempts_processes(execution: str, with_pids: bool = False) -> list:
    """Command lines (with `with_pids`, (pid, command line)) of the live processes that carry the marker of one
    of the execution's attempts: anything its tasks or their engines started."""
    found = []
    needle = f"{MARKER_ENV}=flytesnacks-development-{execution}/".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes():
                    line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    found.append((int(entry.name), line) if with_pids else line)
            except OSError:
                continue
    return found
