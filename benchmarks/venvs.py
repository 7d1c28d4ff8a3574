"""Venvs of their own for what the benchmark runs beside flytelite's venv: the peers (benchmarks/peers.py) and
a client with flytekit alone (the hello-world row, benchmarks/real_tasks.py).

Each is created once with the version pinned by its caller and cached outside the clone
(FLYTELITE_BENCH_CACHE, else ~/.cache/flytelite-bench, under venvs/<package>); a venv holding another version
is made again. Nothing is ever installed into flytelite's own venv or inside the clone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INSTALL_TIMEOUT = 1800.0


class Unavailable(Exception):
    """A venv could not be installed, or what runs in it failed; the message says why."""


def cache_dir() -> Path:
    return Path(os.environ.get("FLYTELITE_BENCH_CACHE") or Path.home() / ".cache" / "flytelite-bench")


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this environment) without what would point another venv's interpreter at flytelite's
    venv or checkout."""
    return {k: v for k, v in (os.environ if env is None else env).items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def tail(text: str) -> str:
    """The last error-looking line of a failed command's output, else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()] or ["(no output)"]
    return next((line for line in reversed(lines) if "Error" in line or "error:" in line), lines[-1])


def _installed_version(python: Path, package: str) -> str | None:
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                          capture_output=True, text=True, env=clean_env())
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_venv(package: str, version: str) -> Path:
    """The bin folder of a venv holding `package`==`version` (and what it needs), created when needed."""
    venv = cache_dir() / "venvs" / package
    python = venv / "bin" / "python"
    if _installed_version(python, package) == version:
        return python.parent
    print(f"benchmark: installing {package}=={version} into {venv} (once) ...", file=sys.stderr, flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    steps = {"python -m venv": [sys.executable, "-m", "venv", str(venv)],
             "pip install --upgrade pip": [*pip, "--upgrade", "pip"],
             f"pip install {package}=={version}": [*pip, f"{package}=={version}"]}
    for what, argv in steps.items():
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"`{what}` took over {INSTALL_TIMEOUT:.0f} s") from None
        if done.returncode != 0:
            raise Unavailable(f"`{what}` failed (exit {done.returncode}): {tail(done.stderr or done.stdout)}")
    return python.parent
