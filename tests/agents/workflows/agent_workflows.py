"""Workflows whose tasks run on flytekit agents: flytekit's FileSensor and the test plugin package's
agents (tests/agents/test_agents_pkg, which must be importable where this file is)."""

from datetime import timedelta

from flytekit import TaskMetadata, task, workflow
from flytekit.core.base_task import PythonTask
from flytekit.core.interface import Interface
from flytekit.sensor.file_sensor import FileSensor
from flytelite_test_agents import GreetTask, WaitTask

wait_for_file = FileSensor(name="wait_for_file")
wait_for_marker = WaitTask(name="wait_for_marker")
greet = GreetTask(name="greet")
# Waits for a marker that never comes: the task's timeout ends it.
wait_briefly = WaitTask(name="wait_briefly", metadata=TaskMetadata(timeout=timedelta(seconds=8)))


@task
def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


@workflow
def sensor_wf(path: str) -> str:
    sensed = wait_for_file(path=path)
    text = read_text(path=path)
    sensed >> text
    return text


@workflow
def wait_wf(marker: str, journal: str, x: int) -> int:
    return wait_for_marker(marker=marker, journal=journal, x=x)


@workflow
def timeout_wf(marker: str, journal: str) -> int:
    return wait_briefly(marker=marker, journal=journal, x=1)


@workflow
def greet_wf(name: str) -> str:
    return greet(name=name)


class Unserved(PythonTask):
    """A task type that no plugin and no agent serves."""

    def __init__(self, name: str):
        super().__init__(task_type="flytelite_nobody", name=name, interface=Interface())


unserved = Unserved(name="unserved")


@workflow
def unserved_wf():
    unserved()
