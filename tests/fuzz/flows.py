"""What the fuzzed server knows before the fuzzing: workflows that run no task process (an Echo task, a
gate that waits for a signal), so the executions fuzzed requests create cost nothing and stop cleanly."""

from datetime import timedelta

from flytekit import wait_for_input, workflow
from flytekit.core.task import Echo

fz_echo = Echo(name="fz_echo", inputs={"a": int})


@workflow
def fz_echo_wf(a: int = 1) -> int:
    return fz_echo(a=a)


@workflow
def fz_gate_wf(a: int = 1) -> str:
    return wait_for_input("title", timeout=timedelta(hours=1), expected_type=str)
