"""Map-task workflows and helpers for the array node tests: real flytekit map_task programs, compiled by
flytelite, whose tasks run in-process (never as flytekit code)."""

from __future__ import annotations

import functools

from flyteidl.core import compiler_pb2
from flytekit import map_task, task, workflow

from flytelite.compiler import compile_workflow
from tests.propeller import harness as h
from tests.propeller.inprocess import InProcessPlugin

TaskPhase = {"UNDEFINED": 0, "QUEUED": 1, "RUNNING": 2, "SUCCEEDED": 3, "ABORTED": 4, "FAILED": 5}


@task(retries=1)
def square(x: int) -> int:
    return x * x


@task
def scale(x: int, factor: int) -> int:
    return x * factor


@task(cache=True, cache_version="1")
def cached_square(x: int) -> int:
    return x * x


@workflow
def cached_squares(xs: list[int]) -> list[int]:
    return map_task(cached_square)(x=xs)


@task
def pair_sum(a: int, b: int) -> int:
    return a + b


@workflow
def pair_sums(xs: list[int], ys: list[int]) -> list[int]:
    return map_task(pair_sum)(a=xs, b=ys)


@workflow
def squares(xs: list[int]) -> list[int]:
    return map_task(square)(x=xs)


@workflow
def squares_two_at_a_time(xs: list[int]) -> list[int]:
    return map_task(square, concurrency=2)(x=xs)


@workflow
def squares_half_may_fail(xs: list[int]) -> list[int | None]:
    return map_task(square, min_success_ratio=0.5)(x=xs)


@workflow
def scaled(xs: list[int], factor: int) -> list[int]:
    return map_task(functools.partial(scale, factor=factor))(x=xs)


class EnvRecordingPlugin(InProcessPlugin):
    """The in-process plugin, also keeping the environment each item was given."""

    def __init__(self, functions: dict):
        super().__init__(functions)
        self.envs: dict[str, dict] = {}

    def handle(self, tctx):
        self.envs[tctx.node_id] = dict(tctx.spec.envs)
        return super().handle(tctx)


def compile_in_process(entity):
    """Compile a workflow with every task run by the in-process plugin; returns (closure, short names)."""
    wf, tasks = h.serialize(entity)
    for t in tasks:
        t.type = "in-process"
    closure = compile_workflow(wf.template, list(wf.sub_workflows),
                               [compiler_pb2.CompiledTask(template=t) for t in tasks], [])
    return closure, [t.id.name.rsplit(".", 1)[-1] for t in tasks]


def functions_for(names: list[str], **by_prefix) -> dict:
    """In-process functions keyed by the map tasks' generated names (`map_<task>_<hash>-arraynode`)."""
    return {name: fn for name in names for prefix, fn in by_prefix.items() if name.startswith(f"map_{prefix}_")}


def item_resources(sink, node_id: str = "n0") -> dict[int, tuple[int, int]]:
    """The last reported (phase, retry attempt) of every item, as admin merges them."""
    merged: dict[int, tuple[int, int]] = {}
    for ev in sink.task_events(node_id):
        for r in ev.metadata.external_resources:
            if (r.index not in merged) or r.retry_attempt >= merged[r.index][1]:
                merged[r.index] = (r.phase, r.retry_attempt)
    return merged
