"""Shared fixtures: a real flytelite server process on a free port with a temporary home.

`--db=postgresql` (or FLYTELITE_TEST_DB=postgresql) runs the tests on a real PostgreSQL cluster
started for the session; every flytelite home then gets a database of its own on it
(flytelite.testing.database_url_for). SQLite is the default.
Every workflow status the tests' engines write is checked (CHECK_ENV in propeller/status.py).
The S3 fixtures start a real S3-compatible server (moto's) and a flytelite server whose blob store is
a bucket there.
`k8s_cluster` starts the project's single-node Kubernetes (scripts/k8s) once per session; its tests skip
when the binaries are not built (scripts/k8s/build.sh).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from flytelite.propeller.status import CHECK_ENV
from flytelite.testing import (
    PG_ENV,
    PostgresCluster,
    RunningServer,
    S3TestServer,
    free_port,
    make_server,
    without_flyte_settings,
)
from flytelite.testing_k8s import KubernetesCluster

# The tests' clients talk to the tests' servers only, whatever FLYTE_* settings the shell exports (the
# tutorial's FLYTE_PLATFORM_URL, say): flytekit lets them win over a config file.
for _name in set(os.environ) - set(without_flyte_settings(dict(os.environ))):
    del os.environ[_name]

# Every workflow status written by the tests' engines (in-process and in server processes, which inherit it)
# is also written afresh and compared: a done node changed after it was done fails the round.
os.environ[CHECK_ENV] = "1"


def pytest_addoption(parser):
    parser.addoption("--db", choices=("sqlite", "postgresql"), default=os.environ.get("FLYTELITE_TEST_DB", "sqlite"),
                     help="database the tests' flytelite servers use (default: sqlite, or $FLYTELITE_TEST_DB)")


def pytest_report_header(config):
    return f"flytelite test database: {config.getoption('--db')}"


@pytest.fixture(scope="session", autouse=True)
def temp_folder():
    """The system's temp folder for the session and every process it starts, deleted after it: flytekit leaves
    a folder in it in every process that imports it (each pyflyte run), and a server killed by a test leaves
    its zygote's. Short: a task's multiprocessing socket goes three folders below it. Open to every user as
    the system's is (the PostgreSQL cluster of --db=postgresql runs as its own user when the tests run as root)."""
    folder = tempfile.mkdtemp(prefix="fl-")
    os.chmod(folder, 0o1777)
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    try:
        yield folder
    finally:
        if saved[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def test_database(request):
    """The PostgreSQL cluster of the session when the tests run on PostgreSQL; None on SQLite."""
    if request.config.getoption("--db") != "postgresql":
        yield None
        return
    cluster = PostgresCluster()
    cluster.start()
    previous = os.environ.get(PG_ENV)
    os.environ[PG_ENV] = cluster.url
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop(PG_ENV, None)
        else:
            os.environ[PG_ENV] = previous
        cluster.stop()


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


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> S3TestServer:
    """moto's S3 server in a process of its own on a free port, with the bucket `my-s3-bucket`."""
    srv = S3TestServer(free_port(), tmp_path_factory.mktemp("s3") / "moto.log")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory, s3) -> RunningServer:
    """A flytelite server whose blob store is s3://my-s3-bucket/flytelite; its flytekit config names the
    S3 endpoint as a Flyte sandbox's does."""
    srv = make_server(tmp_path_factory.mktemp("s3-server"), s3.server_config("flytelite"))
    with open(srv.config_path, "a") as f:
        f.write(s3.client_config())
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def s3_remote(s3_server):
    """A FlyteRemote on the S3 server (it reads blobs from the bucket with the config's S3 settings)."""
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    return FlyteRemote(FlyteConfig.auto(str(s3_server.config_path)), default_project="flytesnacks",
                       default_domain="development")


@pytest.fixture(scope="session")
def k8s_cluster() -> KubernetesCluster:
    """The project's single-node Kubernetes (scripts/k8s), started once for the session and stopped (host
    changes undone) at its end. Skips when it cannot start here: the binaries are built once by
    scripts/k8s/build.sh (`make k8s-build`), and it needs root."""
    reason = KubernetesCluster.unavailable_reason()
    if reason:
        pytest.skip(reason)
    cluster = KubernetesCluster()
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a 64 MiB tmpfs of its own, for tests that fill a disk (mounting needs root; skipped without)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("a tmpfs cannot be mounted here (not root?)")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)
