"""Tasks for tests of warm workers in a task environment of their own (see task_envs.py)."""

from __future__ import annotations

import importlib
import os
import time

from flytekit import task


@task
def wait_for_file(path: str) -> str:
    """Runs until `path` exists (a test's signal), two minutes at most."""
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.02)
    return path


@task
def module_value(module: str) -> str:
    return importlib.import_module(module).VALUE
