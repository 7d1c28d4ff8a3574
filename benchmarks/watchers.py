"""What runs beside a timed execution: a sampler of the server's task processes, and a client polling it.

ProcessSampler counts the processes whose working folder is in the server's home (the zygote, its workers,
cold task processes) as often as it can, and sums their proportional set size (PSS: a page shared by n
processes counts 1/n in each, so forked workers' shared pages are counted once): the most of each at once.

Watcher polls an execution as `pyflyte run --remote --wait` does (FlyteRemote.wait, which syncs the execution,
its node executions and each node's task executions and data), at a set interval, until it is done.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

from flytelite.testing import processes_in


def pss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass  # gone meanwhile
    return 0.0


class ProcessSampler(threading.Thread):
    """The most processes (and their most PSS) seen at once in `home` until stopped; a context manager."""

    def __init__(self, home: Path):
        super().__init__(daemon=True)
        self.home = home
        self.peak_processes = 0
        self.peak_mib = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            pids = processes_in(self.home)
            self.peak_processes = max(self.peak_processes, len(pids))
            self.peak_mib = max(self.peak_mib, sum(pss_mib(pid) for pid in pids))

    def __enter__(self) -> ProcessSampler:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self.join()


class Watcher(threading.Thread):
    """FlyteRemote.wait(sync_nodes=True) of one execution, every `interval` seconds, in a thread."""

    def __init__(self, config_path: Path, name: str, interval: float, project: str, domain: str):
        super().__init__(daemon=True)
        self.config_path, self.name, self.interval = config_path, name, interval
        self.project, self.domain = project, domain
        self.polls = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        from flytekit.configuration import Config
        from flytekit.remote import FlyteRemote

        try:
            remote = FlyteRemote(Config.auto(str(self.config_path)), default_project=self.project,
                                 default_domain=self.domain)
            execution = remote.fetch_execution(name=self.name)
            sync = remote.sync_execution

            def counted(*args, **kwargs):
                self.polls += 1
                return sync(*args, **kwargs)

            remote.sync_execution = counted  # type: ignore[method-assign]
            remote.wait(execution, poll_interval=timedelta(seconds=self.interval), sync_nodes=True)
        except BaseException as e:  # noqa: BLE001 - reported by the row
            self.error = e
