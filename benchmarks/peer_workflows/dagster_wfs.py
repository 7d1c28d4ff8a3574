"""The two peer workflows in Dagster: jobs of ops, run with `execute_in_process` (its in-process executor,
one op after another in this process, an ephemeral instance in memory)."""

from __future__ import annotations

import dagster
from dagster import DynamicOut, DynamicOutput, graph, op
from timing import CHAIN, FAN_OUT, report


@op
def step(x: int) -> int:
    return x + 1


@op(out=DynamicOut(int))
def split(xs: list[int]):
    for i, x in enumerate(xs):
        yield DynamicOutput(x, mapping_key=str(i))


@op
def gather(ys: list[int]) -> list[int]:
    return ys


@graph
def chain_graph(x: int) -> int:
    """CHAIN ops, each taking the one before's output (Dagster names the repeated op step, step_2, ...)."""
    for _ in range(CHAIN):
        x = step(x)
    return x


@graph
def fan_out_graph(xs: list[int]) -> list[int]:
    """step mapped over the list's items (dynamic outputs), collected into one list."""
    return gather(split(xs).map(step).collect())


CHAIN_JOB = chain_graph.to_job()
FAN_OUT_JOB = fan_out_graph.to_job()


def chain() -> int:
    return CHAIN_JOB.execute_in_process(input_values={"x": 0}).output_value()


def fan_out() -> list[int]:
    return FAN_OUT_JOB.execute_in_process(input_values={"xs": list(range(FAN_OUT))}).output_value()


if __name__ == "__main__":
    report(dagster.__version__, chain, fan_out)
