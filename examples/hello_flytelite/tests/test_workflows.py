"""The project's workflows run on a real Flyte backend (flytelite's pytest plugin), Python values in and out."""

import pytest
from flytelite.pytest_plugin import ExecutionFailed

from hello_flytelite.workflows import hello, must_be_positive, squares_stats


def test_hello(flytelite_run):
    assert flytelite_run(hello, name="flytelite") == "Hello, flytelite!"


def test_map_task_and_two_outputs(flytelite_run):
    assert flytelite_run(squares_stats, xs=[1, 2, 3, 4]) == (30, 7.5)


def test_a_single_task_and_its_failure(flytelite_run):
    assert flytelite_run(must_be_positive, x=3) == 3
    with pytest.raises(ExecutionFailed, match="-1 is not positive"):
        flytelite_run(must_be_positive, x=-1)


def test_the_execution_is_on_the_server(flytelite_run, flytelite_remote):
    flytelite_run(hello)
    execution = flytelite_remote.fetch_execution(name=flytelite_run.last_execution.id.name)
    assert execution.is_done and execution.outputs["o0"] == "Hello, world!"
