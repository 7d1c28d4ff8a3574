"""The suite talks to its own servers only: a shell that exports the tutorial's FLYTE_PLATFORM_URL (or any
FLYTE_* setting flytekit reads ahead of a config file) runs it the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def test_an_end_to_end_test_passes_with_the_tutorials_settings_exported(tmp_path):
    env = {**os.environ, "FLYTE_PLATFORM_URL": "localhost:30080", "FLYTE_PLATFORM_INSECURE": "true",
           "FLYTECTL_CONFIG": str(tmp_path / "missing.yaml"), "TMPDIR": str(tmp_path)}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "tests/e2e/test_default_plugin.py"], cwd=CHECKOUT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout and "failed" not in run.stdout
