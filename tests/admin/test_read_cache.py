"""Answers about finished node and task executions are kept (admin/read_cache.py); unfinished ones never are."""

from __future__ import annotations

import os

from flyteidl.admin import node_execution_pb2, task_execution_pb2
from flyteidl.core import identifier_pb2 as idpb

from flytelite.admin import read_cache
from flytelite.admin.read_cache import ReadCache
from tests.admin.execution_harness import NODE, TASK, double, values_of
from tests.admin.test_events import PIPELINE, attempt_id, data_path, h, node_id  # noqa: F401 - h is a fixture


def _key(name: str, method: str = "Get") -> tuple[str, bytes]:
    """A request for `name` to `method`, as the cache keys it."""
    return ReadCache.key(method, idpb.Identifier(name=name))


def test_an_answer_is_given_again_until_its_lease_ends_and_the_least_recently_used_go_past_the_size():
    now = [0.0]
    cache = ReadCache(seconds=10.0, max_bytes=30, clock=lambda: now[0])
    cache.put(_key("a"), idpb.Identifier(name="x" * 10))
    assert cache.get(_key("a")).name == "x" * 10
    assert cache.get(_key("a", "Other")) is None and cache.get(_key("b")) is None
    cache.put(_key("b"), idpb.Identifier(name="y" * 10))
    assert cache.get(_key("a")) is not None  # now the most recently used
    cache.put(_key("c"), idpb.Identifier(name="z" * 10))  # 36 bytes in all: the least recent goes
    assert cache.get(_key("b")) is None
    assert cache.get(_key("a")) is not None and cache.get(_key("c")) is not None
    now[0] = 10.0
    assert cache.get(_key("a")) is None


def test_an_answer_past_the_largest_kept_is_not_kept(monkeypatch):
    monkeypatch.setattr(read_cache, "MAX_ANSWER_BYTES", 5)
    cache = ReadCache()
    cache.put(_key("a"), idpb.Identifier(name="longer than five"))
    assert cache.get(_key("a")) is None


def test_reads_of_a_running_attempt_see_each_change_and_those_of_a_finished_one_are_kept(h):  # noqa: F811
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1)
    inputs = h.write_literals(data_path(h, exec_id, "n0", "data", "inputs.pb"), {"x": 3})
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 2, input_uri=inputs)
    get = task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 0))
    listing = task_execution_pb2.TaskExecutionListRequest(node_execution_id=node_id(exec_id, "n0"), limit=10)
    node_data = node_execution_pb2.NodeExecutionGetDataRequest(id=node_id(exec_id, "n0"))
    assert h.svc.GetTaskExecution(get).closure.phase == TASK.RUNNING
    assert len(h.svc.ListTaskExecutions(listing).task_executions) == 1
    assert not h.svc.GetNodeExecutionData(node_data).full_outputs.literals

    h.task_event(exec_id, "n0", double.name, 0, TASK.FAILED, 3)
    h.task_event(exec_id, "n0", double.name, 1, TASK.RUNNING, 4, input_uri=inputs)
    assert h.svc.GetTaskExecution(get).closure.phase == TASK.FAILED
    # The node runs on: its attempts are listed anew.
    assert [t.id.retry_attempt for t in h.svc.ListTaskExecutions(listing).task_executions] == [0, 1]

    outputs = h.write_literals(data_path(h, exec_id, "n0", "data", "1", "outputs.pb"), {"o0": 6})
    h.task_event(exec_id, "n0", double.name, 1, TASK.SUCCEEDED, 5, output_uri=outputs)
    h.node_event(exec_id, "n0", NODE.SUCCEEDED, 5, output_uri=outputs)
    data = task_execution_pb2.TaskExecutionGetDataRequest(id=attempt_id(exec_id, "n0", 1))
    assert values_of(h.svc.GetTaskExecutionData(data).full_outputs) == {"o0": 6}
    assert values_of(h.svc.GetNodeExecutionData(node_data).full_outputs) == {"o0": 6}
    assert len(h.svc.ListTaskExecutions(listing).task_executions) == 2
    # Finished: asked again, the answers come without the blob store.
    os.remove(h.ctx.blobs.local_file(outputs))
    assert values_of(h.svc.GetTaskExecutionData(data).full_outputs) == {"o0": 6}
    assert values_of(h.svc.GetNodeExecutionData(node_data).full_outputs) == {"o0": 6}
    assert h.svc.GetTaskExecution(get) is h.svc.GetTaskExecution(get)
