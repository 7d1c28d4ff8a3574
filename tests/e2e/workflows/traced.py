"""A task that returns the trace context its process was started with (TRACEPARENT), for the tracing test."""

import os

from flytekit import task, workflow


@task
def show_traceparent() -> str:
    return os.environ.get("TRACEPARENT", "")


@workflow
def traced_wf() -> str:
    return show_traceparent()
