"""flytelite's pytest plugin (the `pytest11` entry point): a real Flyte backend in a user's own test suite.

Fixtures, all lazy (nothing starts unless a test asks for one):
- `flytelite_server`: a `flytelite start` process on a free port with a temporary home and embedded defaults
  (SQLite, a blob folder, tasks as local processes of the test's own interpreter); one per pytest process, so
  one per pytest-xdist worker. A module whose `pytestmark` has `pytest.mark.flytelite(config={...})`, or that
  overrides the `flytelite_config` fixture, gets a server of its own with that configuration for the module.
- `flytelite_remote`: a FlyteRemote on it (project flytesnacks, domain development).
- `flytelite_run`: `flytelite_run(my_workflow, x=1)` fast-registers the entity's module, as
  `pyflyte run --remote` does, runs it remotely and returns its outputs as Python values.

`--flytelite-keep` keeps each server's home (database, blobs, task logs, server.log) and names it at the end.
The server process is flytelite.testing.RunningServer, the helper flytelite's own tests use.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from flytelite.testing import RunningServer, make_server, without_flyte_settings

MARKER = "flytelite"
PROJECT, DOMAIN = "flytesnacks", "development"
POLL = timedelta(milliseconds=50)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("flytelite", "flytelite: a real Flyte backend for tests")
    group.addoption("--flytelite-keep", action="store_true", default=False,
                    help="keep the flytelite servers' homes (database, blobs, logs) after the run, for debugging")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(config=None): flytelite server configuration (a dict of "
                                       "flytelite.yaml keys) for the tests of a module; such a module gets a "
                                       "server of its own")


def server_config(overrides: dict[str, Any]) -> str:
    """flytelite.yaml for a test server: tasks run with this interpreter, the overrides on top."""
    config: dict[str, Any] = {"images": {"default": sys.executable}}
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return yaml.safe_dump(config, sort_keys=True)


class ServerPool:
    """The flytelite servers of one pytest process, by configuration, each started on first use."""

    def __init__(self, keep: bool, worker: str):
        self.keep, self.worker = keep, worker
        self.servers: dict[str, RunningServer] = {}
        self.kept: list[Path] = []

    def get(self, config: str) -> RunningServer:
        server = self.servers.get(config)
        if server is None:
            folder = Path(tempfile.mkdtemp(prefix=f"flytelite-pytest-{self.worker}-"))
            server = make_server(folder, config)
            # The server's and its tasks' temporary files (flytekit makes folders at import) go with the folder.
            (folder / "tmp").mkdir()
            server.env = {**without_flyte_settings(dict(os.environ)), "TMPDIR": str(folder / "tmp")}
            try:
                server.start()
            except BaseException:
                self._discard(server, folder)
                raise
            self.servers[config] = server
        return server

    def stop(self, config: str) -> None:
        server = self.servers.pop(config, None)
        if server is not None:
            self._discard(server, server.log_path.parent)

    def close(self) -> None:
        for config in list(self.servers):
            self.stop(config)

    def _discard(self, server: RunningServer, folder: Path) -> None:
        try:
            if server.proc is not None:
                server.stop()
        finally:
            if self.keep:
                self.kept.append(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def _flytelite_pool(request: pytest.FixtureRequest):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    pool = ServerPool(request.config.getoption("--flytelite-keep"), worker)
    request.config.stash[_KEPT] = pool.kept
    yield pool
    pool.close()


_KEPT = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    kept = config.stash.get(_KEPT, [])
    for folder in kept:
        terminalreporter.write_line(f"flytelite: kept the server home {folder} (server.log, flytelite-home/)")


@pytest.fixture(scope="module")
def flytelite_config() -> dict[str, Any]:
    """flytelite.yaml keys for the servers of a module; override it to configure a module's server."""
    return {}


@pytest.fixture(scope="module")
def flytelite_server(request: pytest.FixtureRequest, _flytelite_pool: ServerPool,
                     flytelite_config: dict[str, Any]) -> Iterator[RunningServer]:
    """A running flytelite server: the process-wide one, or the module's own when it sets a configuration."""
    overrides = dict(flytelite_config)
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        overrides.update(marker.kwargs.get("config") or (marker.args[0] if marker.args else {}))
    config = server_config(overrides)
    server = _flytelite_pool.get(config)
    yield server
    if overrides:
        _flytelite_pool.stop(config)


@pytest.fixture(scope="module")
def flytelite_remote(flytelite_server: RunningServer):
    """A FlyteRemote on `flytelite_server`, project flytesnacks, domain development."""
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    # Read from the server's config file alone: flytekit would let FLYTE_* variables (a developer's own
    # platform, say) win over it.
    hidden = {k: os.environ.pop(k) for k in set(os.environ) - set(without_flyte_settings(dict(os.environ)))}
    try:
        config = FlyteConfig.auto(str(flytelite_server.config_path))
    finally:
        os.environ.update(hidden)
    return FlyteRemote(config, default_project=PROJECT, default_domain=DOMAIN)


@pytest.fixture(scope="module")
def flytelite_run(flytelite_remote) -> RemoteRunner:
    """`flytelite_run(entity, **inputs)`: run a local @workflow or @task on the server; returns its outputs."""
    return RemoteRunner(flytelite_remote)


class ExecutionFailed(AssertionError):
    """A remote execution ended in another phase than SUCCEEDED."""


class RemoteRunner:
    """Runs the user's own entities remotely, registering each module version once (fast registration)."""

    def __init__(self, remote):
        self.remote = remote
        self._registered: dict[tuple[str, str], Any] = {}
        self.last_execution = None

    def __call__(self, entity, /, **inputs):
        from flytekit.models.core.execution import WorkflowExecutionPhase

        flyte_entity = self.register(entity)
        execution = self.remote.execute(flyte_entity, inputs=inputs, type_hints=entity.python_interface.inputs)
        # FlyteRemote's own wait polls every 30 s; a test wants the answer as soon as it is there.
        execution = self.remote.wait(execution, poll_interval=POLL, sync_nodes=False)
        self.last_execution = execution
        if execution.closure.phase != WorkflowExecutionPhase.SUCCEEDED:
            phase = WorkflowExecutionPhase.enum_to_string(execution.closure.phase)
            error = execution.closure.error.message if execution.closure.error else ""
            raise ExecutionFailed(f"execution {execution.id.name} of {entity.name} ended {phase}: {error}")
        outputs = entity.python_interface.outputs
        values = [execution.outputs.get(name, as_type=python_type) for name, python_type in outputs.items()]
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def register(self, entity):
        """Fast-register the entity's module (its source folder's imported modules, as `pyflyte run --remote`
        packages them); again only when the module's file changed."""
        module_name = entity.name.rsplit(".", 1)[0]
        module = sys.modules.get(module_name)
        module_file = getattr(module, "__file__", None)
        if not module_file:
            raise ValueError(f"{entity.name} is not defined in an importable module file; flytelite_run runs "
                             f"entities of modules (not of __main__ or a notebook)")
        digest = hashlib.sha256(Path(module_file).read_bytes()).hexdigest()
        key = (entity.name, digest)
        if key not in self._registered:
            depth = module_name.count(".") + 1 + (Path(module_file).name == "__init__.py")
            root = Path(module_file).resolve().parents[depth - 1]
            self._registered[key] = self.remote.register_script(
                entity, source_path=str(root), module_name=module_name, project=PROJECT, domain=DOMAIN)
        return self._registered[key]
