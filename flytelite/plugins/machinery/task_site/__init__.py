"""What every locally run task process starts with besides its own environment.

This folder goes first on PYTHONPATH, so its sitecustomize.py runs in each of the task's Python
processes: see there what it adjusts and why.
"""

from __future__ import annotations

import os

FOLDER = os.path.dirname(os.path.abspath(__file__))
# The task's container image, read by sitecustomize.py (which cannot import this module).
IMAGE_ENV = "FLYTELITE_TASK_IMAGE"


def task_process_env(env: dict[str, str]) -> dict[str, str]:
    """`env` plus what a task process of this server needs (a copy; `env` is left as it is)."""
    out = dict(env)
    current = env.get("PYTHONPATH")
    out["PYTHONPATH"] = f"{FOLDER}{os.pathsep}{current}" if current else FOLDER
    return out
