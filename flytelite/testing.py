"""Run a real flytelite server process for tests and benchmarks, with the flytekit config that reaches it.

The database tests run on is SQLite (a file under each server's home) unless a PostgreSQL
cluster was started for them (`PostgresCluster`, `FLYTELITE_TEST_PG`): then every home gets a
database of its own on that cluster (`database_url_for`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flytelite.testing_pg import PG_ENV, PostgresCluster, create_database

__all__ = ["PG_ENV", "PostgresCluster", "RunningServer", "config_args_for", "database_url_for", "free_port", "make_server",
           "without_flyte_settings"]


def without_flyte_settings(env: dict[str, str]) -> dict[str, str]:
    """`env` without the variables flytekit takes its platform settings from ahead of a config file (FLYTE_*,
    FLYTECTL_CONFIG): a client of a test server must not follow a developer's own, such as the tutorial's
    FLYTE_PLATFORM_URL."""
    return {k: v for k, v in env.items() if not (k.startswith("FLYTE_") or k == "FLYTECTL_CONFIG")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningServer:
    """A flytelite server process and the flytekit configuration that reaches it."""

    home: Path
    port: int
    config_path: Path
    log_path: Path
    proc: subprocess.Popen | None = None
    extra_args: list[str] = field(default_factory=list)
    # `flytelite start --role`: an "engine" replica serves no port; it is ready once it says so.
    role: str = "all"
    # The certificate clients trust when the server serves TLS (`make_server(tls=...)`); "" for plain.
    ca_file: str = ""
    # The server's environment (its task processes inherit it); None: this process's.
    env: dict[str, str] | None = None
    # The module run as `python -m <module> start ...` (the benchmarks run one of their own).
    module: str = "flytelite.cli"

    @property
    def endpoint(self) -> str:
        return f"localhost:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.ca_file else 'http'}://localhost:{self.port}"

    def ssl_context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None

    def admin_config(self, extra: str = "") -> str:
        """The `admin:` section of a flytekit config that reaches this server; `extra` adds indented lines."""
        trust = f"  insecure: false\n  caCertFilePath: {self.ca_file}\n" if self.ca_file else "  insecure: true\n"
        return f"admin:\n  endpoint: dns:///localhost:{self.port}\n{trust}{extra}"

    def client_env(self) -> dict[str, str]:
        """Environment for a flytekit client process (pyflyte) pointed at this server."""
        return {**without_flyte_settings(dict(os.environ)), "FLYTECTL_CONFIG": str(self.config_path)}

    def start(self, timeout: float = 60) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "start", "--port", str(self.port), "--home", str(self.home),
             "--role", self.role, *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, env=self.env,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"flytelite exited with {self.proc.returncode}:\n{_log_tail(self.log_path)}")
            if self.role == "engine":
                if "engine replica" in self.log_text():
                    return
                time.sleep(0.1)
                continue
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1, context=self.ssl_context()) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        _kill(self.proc)
        self.proc = None
        raise RuntimeError(f"flytelite did not become healthy in {timeout}s (stopped):\n{_log_tail(self.log_path)}")

    def stop(self, sig: int = 15, timeout: float = 60) -> int:
        if self.proc is None:
            return 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.proc = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def _kill(proc: subprocess.Popen) -> None:
    """Stop a test server that never became ready: no test would stop a server it never got."""
    proc.kill()
    proc.wait()


def _log_tail(path: Path, limit: int = 20_000) -> str:
    """The end of a test server's log (a server stuck in a loop of errors can write hundreds of megabytes)."""
    text = path.read_text(errors="replace")
    return text if len(text) <= limit else f"[... the start of {path} left out]\n{text[-limit:]}"


def database_url_for(home: Path) -> str:
    """The database of the flytelite state under `home`: "" (SQLite in home) unless the tests run on PostgreSQL.

    On PostgreSQL the name derives from the home, so a server restarted on the same home, or a second
    process opening it, finds the same database; the first call creates it empty.
    """
    server_url = os.environ.get(PG_ENV, "")
    if not server_url:
        return ""
    name = "flytelite_" + hashlib.sha1(str(Path(home).resolve()).encode()).hexdigest()[:20]
    return create_database(server_url, name)


def config_args_for(home: Path) -> list[str]:
    """`flytelite` CLI arguments that reach the database of `home` besides `--home` ([] on SQLite)."""
    database_url = database_url_for(home)
    if not database_url:
        return []
    path = Path(home).parent / f"{Path(home).name}.database.yaml"
    path.write_text(f"database_url: {json.dumps(database_url)}\n")
    return ["--config", str(path)]


def make_server(tmp_path: Path, config: str = "", home: Path | None = None,
                tls: tuple[Path, Path] | None = None) -> RunningServer:
    """A server (not started) with its home, port, log and flytekit config under `tmp_path`.

    `config` is YAML for the server's own configuration file (`flytelite.yaml` in `tmp_path`);
    the test database's URL is added to it. `home` is another state folder (replicas share one).
    `tls` (certificate, key) serves TLS, and the flytekit config trusts that certificate.
    """
    tmp_path.mkdir(parents=True, exist_ok=True)
    home = home or tmp_path / "flytelite-home"
    port = free_port()
    client_config = tmp_path / "flytekit-config.yaml"
    server = RunningServer(home=home, port=port, config_path=client_config, log_path=tmp_path / "server.log",
                           ca_file=str(tls[0]) if tls else "")
    client_config.write_text(server.admin_config())
    database_url = database_url_for(home)
    if config or database_url:
        server_config = tmp_path / "flytelite.yaml"
        server_config.write_text(config + (f"\ndatabase_url: {json.dumps(database_url)}\n" if database_url else ""))
        server.extra_args = ["--config", str(server_config)]
    if tls:
        server.extra_args += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
    return server


@dataclass
class S3TestServer:
    """A real S3-compatible server for tests (moto's, from `moto[server]`) in a process of its own.

    `start()` waits until it answers and creates `bucket`; the credentials are whatever the test chooses
    (moto accepts any), the Flyte sandbox's by default.
    """

    port: int
    log_path: Path
    bucket: str = "my-s3-bucket"
    access_key_id: str = "minio"
    secret_access_key: str = "miniostorage"
    proc: subprocess.Popen | None = None
    # The address it listens on: 0.0.0.0 for pods of a test cluster, which reach it through their bridge.
    listen: str = "127.0.0.1"

    @property
    def endpoint(self) -> str:
        return f"http://localhost:{self.port}"

    def start(self, timeout: float = 60) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", self.listen, "-p", str(self.port)],
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.proc.returncode}:\n{_log_tail(self.log_path)}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                    break
            except OSError as exc:
                if time.monotonic() > deadline:
                    _kill(self.proc)
                    self.proc = None
                    raise RuntimeError(f"moto_server did not answer in {timeout}s:\n{_log_tail(self.log_path)}") from exc
                time.sleep(0.1)
        self.client().create_bucket(Bucket=self.bucket)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def client(self):
        """A botocore S3 client of this server."""
        import botocore.config
        import botocore.session

        return botocore.session.get_session().create_client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=botocore.config.Config(s3={"addressing_style": "path"}))

    def server_config(self, prefix: str = "") -> str:
        """YAML for a flytelite server whose blob store is this bucket (under `prefix`)."""
        root = f"s3://{self.bucket}/{prefix}".rstrip("/")
        return (f"storage_root: {root}\ns3:\n  endpoint: {self.endpoint}\n  access_key_id: {self.access_key_id}\n"
                f"  secret_access_key: {self.secret_access_key}\n")

    def client_config(self) -> str:
        """The `storage` section of a flytekit config that reaches this server, as a Flyte sandbox's does."""
        return (f"storage:\n  connection:\n    endpoint: {self.endpoint}\n    access-key: {self.access_key_id}\n"
                f"    secret-key: {self.secret_access_key}\n")


def processes_in(folder: Path) -> list[int]:
    """The processes whose working folder is in `folder` (deleted folders too): a server's task processes and
    zygotes, by its home."""
    prefix = f"{folder}/"
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry.name}/cwd")
            except OSError:
                continue  # gone meanwhile
            if cwd.startswith(prefix):
                found.append(int(entry.name))
    return found
