"""Helpers for end-to-end tests: run real pyflyte against a test server and read results with FlyteRemote."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

WORKFLOWS = Path(__file__).parent / "workflows"
PYFLYTE = str(Path(sys.executable).parent / "pyflyte")
EXECUTION_URL = re.compile(r"/console/projects/([^/\s]+)/domains/([^/\s]+)/executions/([a-z0-9-]+)")


def copy_workflows(dest: Path, *names: str) -> Path:
    """Copy workflow files into a folder of the test's own (pyflyte packages the whole folder)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(WORKFLOWS / name, dest / name)
    return dest


def pyflyte(server, *args: str, cwd: Path, check: bool = True, timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [PYFLYTE, "--config", str(server.config_path), *args],
        cwd=cwd, env=server.client_env(), capture_output=True, text=True, timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"pyflyte {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_remote(server, folder: Path, file: str, entity: str, *inputs: str) -> str:
    """`pyflyte run --remote file entity --inputs...`; returns the execution name from the printed URL."""
    proc = pyflyte(server, "run", "--remote", "--project", "flytesnacks", "--domain", "development",
                   file, entity, *inputs, cwd=folder)
    match = EXECUTION_URL.search(proc.stdout + proc.stderr)
    assert match, f"no execution URL in pyflyte output:\n{proc.stdout}\n{proc.stderr}"
    return match.group(3)


def finished(server, name: str, timeout: float = 180):
    """The execution `name` on `server` once it ended (FlyteRemote.wait)."""
    remote = remote_for(server)
    return remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=timeout),
                       poll_interval=timedelta(seconds=0.5))


def wait_for(predicate, what: str, timeout: float = 120):
    """Poll `predicate` until it returns something truthy (returned); fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def remote_for(server, project: str = "flytesnacks", domain: str = "development"):
    """A FlyteRemote on `server` through its flytekit config file."""
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.remote import FlyteRemote

    return FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project=project, default_domain=domain)
