"""A task that takes a large string and returns three values: its length, a middle-sized string (past the
API's inline size, under the offloading size) and the large string again (past the offloading size)."""

from flytekit import task, workflow

MIDDLE = 3 * 1024 * 1024


@task
def echo_large(blob: str) -> tuple[int, str, str]:
    return len(blob), blob[:MIDDLE], blob


@workflow
def large_wf(blob: str) -> tuple[int, str, str]:
    return echo_large(blob=blob)
