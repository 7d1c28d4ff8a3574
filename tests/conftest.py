"""Shared fixtures: a real flytelite server process on a free port with a temporary home."""

from __future__ import annotations

import pytest

from flytelite.testing import RunningServer, make_server


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> RunningServer:
    """One server for the whole session (tests use distinct names to stay apart)."""
    srv = make_server(tmp_path_factory.mktemp("server"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path) -> RunningServer:
    """A server of the test's own, for tests that kill or restart it."""
    srv = make_server(tmp_path)
    srv.start()
    yield srv
    if srv.proc is not None:
        srv.stop()


@pytest.fixture(scope="session")
def remote(server):
    """A FlyteRemote on the session server, project flytesnacks, domain development."""
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    return FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                       default_domain="development")
