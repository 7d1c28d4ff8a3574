"""pytest plugin rows: what a user's test waits for with flytelite's plugin (flytelite/pytest_plugin.py).

- server ready: ServerPool.get, the `flytelite_server` fixture's work: a `flytelite start` on a free port with
  a fresh temporary home, until /healthz answers (the machine has started one before: the first run warms
  the disk cache and is not counted);
- hello-world test: `flytelite_run(hello, name=...)` on that server, as the example project's first test
  runs it: fast-registering the module, the execution, its outputs back as Python values.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benchmarks.common import Row, timed

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hello_flytelite"


def pytest_plugin_rows(runs: int) -> list[Row]:
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    from flytelite.pytest_plugin import DOMAIN, PROJECT, RemoteRunner, ServerPool, server_config

    sys.path.insert(0, str(EXAMPLE))
    from hello_flytelite.workflows import hello

    ready, hello_test = [], []
    for i in range(runs + 1):
        pool = ServerPool(keep=False, worker="bench")
        try:
            started = time.perf_counter()
            server = pool.get(server_config({}))
            took = time.perf_counter() - started
            remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project=PROJECT,
                                 default_domain=DOMAIN)
            run = RemoteRunner(remote)
            test = timed(lambda run=run: _check(run(hello, name="bench")))
        finally:
            pool.close()
        if i:  # the first run warms the machine's caches
            ready.append(took)
            hello_test.append(test)
    return [
        Row("pytest plugin: server ready (flytelite_server)", ready, "s", goal="< 1 s").check("<", 1.0),
        Row("pytest plugin: hello-world test (flytelite_run: fast-register, run, outputs)", hello_test, "s",
            goal="< 2 s").check("<", 2.0),
    ]


def _check(value: str) -> None:
    assert value == "Hello, bench!", value
