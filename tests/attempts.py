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


def attempts_roots(execution: str) -> list[str]:
    """Command lines of the attempts' processes that no other of them started: the processes the plugin started,
    without the children they fork (a child between fork and exec carries its parent's command line)."""
    found = dict(attempts_processes(execution, with_pids=True))
    roots = []
    for pid, line in found.items():
        try:
            # The parent's pid is the field after the command name, which is in parentheses and may hold spaces.
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent not in found:
            roots.append(line)
    return roots
