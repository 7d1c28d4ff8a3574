"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a folder, start on a free port, stop.

It runs Debian's server binaries (`/usr/lib/postgresql/<version>/bin`, or the folder in
`FLYTELITE_PG_BIN`) as user `postgres` when we are root (PostgreSQL refuses to run as root).
It trades durability for speed (fsync off): never point it at data worth keeping.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import cast

# The environment variable that tells test helpers (in this process and in the ones it starts) where
# the cluster is: an SQLAlchemy URL of its maintenance database `postgres`.
PG_ENV = "FLYTELITE_TEST_PG"

_created: set[tuple[str, str]] = set()


def find_pg_bin() -> Path:
    """The folder of `initdb` / `pg_ctl`: FLYTELITE_PG_BIN, else Debian's newest installed PostgreSQL."""
    if os.environ.get("FLYTELITE_PG_BIN"):
        return Path(os.environ["FLYTELITE_PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise RuntimeError("PostgreSQL's server binaries are not installed: apt-get install postgresql "
                       "(or set FLYTELITE_PG_BIN to the folder holding initdb and pg_ctl)")


def _temp_dir_for_postgres(as_root: bool) -> str:
    """Where the cluster's folder goes: the temp folder, unless we are root and user postgres (who runs the
    cluster then) cannot reach it, as in a private temp folder (mkdtemp's are 0700); /tmp then."""
    where = tempfile.gettempdir()
    if not as_root:
        return where
    path = Path(where).resolve()
    if all(folder.stat().st_mode & stat.S_IXOTH for folder in (path, *path.parents)):
        return where
    return "/tmp"


class PostgresCluster:
    """A PostgreSQL cluster of its own in a temporary folder, reached through a unix socket in that folder."""

    def __init__(self, bin_dir: Path | None = None, listen: str = "127.0.0.1", trusted_networks: tuple[str, ...] = ()):
        """`listen`: the addresses it listens on (PostgreSQL's listen_addresses); `trusted_networks`: CIDRs
        whose clients connect without a password besides loopback's (pods of a test cluster, say)."""
        self.bin_dir = bin_dir or find_pg_bin()
        self.listen, self.trusted_networks = listen, trusted_networks
        self._as_root = os.geteuid() == 0
        self.folder = Path(tempfile.mkdtemp(prefix="flytelite-pg-", dir=_temp_dir_for_postgres(self._as_root)))
        self.data_dir = self.folder / "data"
        self.socket_dir = self.folder
        self.port = 0

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the maintenance database (`postgres`)."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@/{name}?host={self.socket_dir}&port={self.port}"

    def start(self, timeout: float = 60) -> None:
        if self._as_root:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")
        with open(self.data_dir / "pg_hba.conf", "a") as hba:
            hba.writelines(f"host all all {network} trust\n" for network in self.trusted_networks)
        self.port = _free_port()
        self._options = " ".join([
            f"-p {self.port}", f"-c listen_addresses='{self.listen}'", f"-c unix_socket_directories={self.socket_dir}",
            # Every test server keeps a small pool; a session holds dozens of them.
            "-c max_connections=400", "-c shared_buffers=64MB",
            "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
        ])
        self.resume(timeout)

    def pause(self) -> None:
        """Stop the server, keeping its data and port, as a restart's first half does (`resume` is the second)."""
        self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w")

    def resume(self, timeout: float = 60) -> None:
        self._run("pg_ctl", "start", "-D", str(self.data_dir), "-w", "-t", str(int(timeout)), "-o", self._options,
                  "-l", str(self.folder / "postgres.log"))

    def stop(self) -> None:
        if self.port:
            self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "immediate", "-w", check=False)
            self.port = 0
        shutil.rmtree(self.folder, ignore_errors=True)

    def log_text(self) -> str:
        path = self.folder / "postgres.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        cmd = [str(self.bin_dir / tool), *args]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=self.folder)
        if check and out.returncode != 0:
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stderr or out.stdout}\n{self.log_text()}")


def create_database(server_url: str, name: str) -> str:
    """Create database `name` on the cluster whose maintenance URL is `server_url` (once); return its URL."""
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    if (server_url, name) not in _created:
        import psycopg
        from psycopg import errors

        deadline = time.monotonic() + 30
        # The URL names one host and port (a query value may be a tuple when repeated).
        with psycopg.connect(dbname=url.database, user=url.username, host=cast(str, url.query["host"]),
                             port=cast(str, url.query["port"]), autocommit=True) as conn:
            while True:
                try:
                    conn.execute(f'CREATE DATABASE "{name}"')
                    break
                except errors.DuplicateDatabase:
                    break
                except errors.ObjectInUse:
                    # Another process is creating a database from template1 right now: wait for it.
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
                except errors.UniqueViolation:
                    break  # created concurrently by another process
        _created.add((server_url, name))
    return f"postgresql+psycopg://{url.username}@/{name}?host={url.query['host']}&port={url.query['port']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
