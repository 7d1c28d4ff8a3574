"""Relaunch and recover: every task run leaves a marker file, so a test can count what ran again."""

import uuid
from pathlib import Path

from flytekit import task, workflow


def mark(marker_dir: str, name: str) -> None:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"{name}-{uuid.uuid4().hex}").touch()


@task
def lifecycle_first(marker_dir: str, word: str) -> str:
    mark(marker_dir, "first")
    return word.upper()


@task
def lifecycle_second(marker_dir: str, text: str) -> str:
    mark(marker_dir, "second")
    if not Path(marker_dir, "allow").exists():
        raise ValueError("second step is not allowed yet")
    return text + "!"


@workflow
def lifecycle_wf(marker_dir: str, word: str) -> str:
    return lifecycle_second(marker_dir=marker_dir, text=lifecycle_first(marker_dir=marker_dir, word=word))
