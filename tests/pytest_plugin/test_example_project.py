"""The example user project (examples/hello_flytelite) passes with flytelite's pytest plugin in a pytest of its
own (so this suite's conftest fixtures stay out), one server per pytest-xdist worker, and leaves no process
and no temporary folder behind; `--flytelite-keep` keeps the homes."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2] / "examples" / "hello_flytelite"


def _plugin_args() -> list[str]:
    # An installed flytelite registers the plugin through its pytest11 entry point; a checkout used through
    # PYTHONPATH (beside another installed copy's metadata) names it explicitly.
    registered = any(ep.name == "flytelite" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "flytelite.pytest_plugin"]


# What the tutorial has a user export for their own server: the plugin's clients must not follow it.
TUTORIAL_ENV = {"FLYTE_PLATFORM_URL": "localhost:30080", "FLYTE_PLATFORM_INSECURE": "true"}


def _pytest(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env or {}), "TMPDIR": str(tmp)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_plugin_args(), *args],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)


def _processes_under(folder: Path) -> list[str]:
    """Processes whose command line or working directory names `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if str(folder) in cmdline or cwd.startswith(str(folder)):
            found.append(f"{proc.name}: {cmdline}")
    return found


def _left(tmp: Path, pytest_processes: int) -> list[Path]:
    """What the run left in its temporary folder, less pytest's own (`pytest-of-<user>`, which pytest rotates)
    and flytekit's own: importing flytekit makes two folders (`flyte-*`, `flyte*`) it never removes, in each
    pytest process that imports it."""
    left = sorted(p for p in tmp.iterdir() if not p.name.startswith("pytest-of-"))
    flytekit_own = [p for p in left if p.name.startswith("flyte") and not p.name.startswith("flytelite")]
    assert len(flytekit_own) <= 2 * pytest_processes, flytekit_own
    return [p for p in left if p not in flytekit_own]


def test_example_project_under_xdist_keeps_homes_on_request(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = _pytest(tmp, "-n", "2", "--flytelite-keep")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 passed" in run.stdout
    kept = _left(tmp, pytest_processes=3)
    workers = {p.name.split("-")[2] for p in kept}
    assert workers == {"gw0", "gw1"}, kept
    assert 3 <= len(kept) <= 4  # a default server per worker, and the custom module's server
    for folder in kept:
        assert (folder / "flytelite-home" / "flytelite.db").exists() and (folder / "server.log").exists()
    assert not _processes_under(tmp)


def test_example_project_leaves_nothing_behind_whatever_flyte_settings_the_shell_exports(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = _pytest(tmp, "-p", "no:xdist", env=TUTORIAL_ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 passed" in run.stdout
    assert _left(tmp, pytest_processes=1) == []
    assert not _processes_under(tmp)
