"""DataProxyService.GetData: the flyte://v1/... URIs a node's and a task attempt's data carry (and the console
offers to copy) resolve, through FlyteRemote.get, to the inputs, the outputs, one variable, or the deck, as
FlyteAdmin resolves them; a bad URI is INVALID_ARGUMENT, a node that does not exist NOT_FOUND."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest
from flyteidl.admin import node_execution_pb2
from flyteidl.core import identifier_pb2
from flyteidl.service import admin_pb2_grpc, dataproxy_pb2, dataproxy_pb2_grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def execution(server, tmp_path_factory):
    code = copy_workflows(tmp_path_factory.mktemp("urls"), "flyte_urls.py")
    name = run_remote(server, code, "flyte_urls.py", "square_wf", "--x", "3")
    remote = remote_for(server)
    ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                     poll_interval=timedelta(seconds=0.5))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    return ex


def _get_data(server, url: str) -> tuple[str, str]:
    with grpc.insecure_channel(server.endpoint) as channel:
        try:
            dataproxy_pb2_grpc.DataProxyServiceStub(channel).GetData(dataproxy_pb2.GetDataRequest(flyte_url=url),
                                                                     timeout=60)
            return "OK", ""
        except grpc.RpcError as e:
            return e.code().name, e.details()


def test_a_nodes_urls_resolve_to_its_inputs_outputs_a_variable_and_its_deck(server, execution):
    remote = remote_for(server)
    node = identifier_pb2.NodeExecutionIdentifier(node_id="n0", execution_id=execution.id.to_flyte_idl())
    with grpc.insecure_channel(server.endpoint) as channel:
        urls = admin_pb2_grpc.AdminServiceStub(channel).GetNodeExecutionData(
            node_execution_pb2.NodeExecutionGetDataRequest(id=node), timeout=60).flyte_urls
    base = f"flyte://v1/flytesnacks/development/{execution.id.name}/n0"
    assert (urls.inputs, urls.outputs, urls.deck) == (f"{base}/i", f"{base}/o", f"{base}/d")
    assert remote.get(urls.inputs).get("x", int) == 3
    assert remote.get(urls.outputs).get("o0", int) == 9
    assert remote.get(f"{urls.outputs}/o0").scalar.primitive.integer == 9
    deck = remote.get(urls.deck)
    assert "3 squared is 9" in (deck if isinstance(deck, bytes) else str(deck.data).encode()).decode()


def test_the_console_offers_the_nodes_urls_to_copy(server, execution):
    import urllib.request

    page = urllib.request.urlopen(f"{server.url}/console/projects/flytesnacks/domains/development/executions/"
                                  f"{execution.id.name}", timeout=60).read().decode()
    base = f"flyte://v1/flytesnacks/development/{execution.id.name}/n0"
    for suffix in ("i", "o", "d"):
        assert f"data-copy='{base}/{suffix}'" in page


def test_an_attempts_urls_resolve_to_that_attempts_data(server, execution):
    remote = remote_for(server)
    base = f"flyte://v1/flytesnacks/development/{execution.id.name}/n0"
    assert remote.get(f"{base}/1/o").get("o0", int) == 9
    assert remote.get(f"{base}/0/i").get("x", int) == 3
    assert remote.get(f"{base}/0/o").literals == {}  # the failed attempt wrote no outputs


def test_bad_urls_get_clear_errors(server, execution):
    base = f"flyte://v1/flytesnacks/development/{execution.id.name}"
    code, message = _get_data(server, "flyte://v1/flytesnacks/development")
    assert code == "INVALID_ARGUMENT" and "failed to parse artifact url" in message
    code, message = _get_data(server, f"{base}/n0/o/nope")
    assert code == "INVALID_ARGUMENT" and "name [nope] not found" in message and "o0" in message
    assert _get_data(server, f"{base}/n0/1/d") == (
        "INVALID_ARGUMENT", "deck type cannot be specified with a retry attempt, just use the node instead")
    assert _get_data(server, f"{base}/n9/o")[0] == "NOT_FOUND"
    code, message = _get_data(server, f"{base}/n0/7/o")
    assert code == "NOT_FOUND" and "attempt 7" in message


def test_the_rest_route_serves_it_too(server, execution):
    import json
    import urllib.parse
    import urllib.request

    url = f"flyte://v1/flytesnacks/development/{execution.id.name}/n0/o/o0"
    with urllib.request.urlopen(f"{server.url}/api/v1/data?flyte_url={urllib.parse.quote(url)}", timeout=60) as r:
        body = json.loads(r.read())
    assert body["literal"]["scalar"]["primitive"]["integer"] in (9, "9")




def _operations(span) -> list[str]:
    return [s.operation_id for s in span.spans if s.operation_id]


def test_execution_metrics_are_spans_of_the_workflow_its_node_and_each_attempt(server, execution):
    from flyteidl.admin import execution_pb2

    with grpc.insecure_channel(server.endpoint) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        span = stub.GetExecutionMetrics(execution_pb2.WorkflowExecutionGetMetricsRequest(
            id=execution.id.to_flyte_idl(), depth=3), timeout=60).span
        shallow = stub.GetExecutionMetrics(execution_pb2.WorkflowExecutionGetMetricsRequest(
            id=execution.id.to_flyte_idl(), depth=0), timeout=60).span
    assert span.workflow_id.name == execution.id.name and not shallow.spans
    assert _operations(span) == ["WORKFLOW_SETUP", "WORKFLOW_TEARDOWN"]
    (node,) = [s for s in span.spans if s.node_id.node_id]
    assert node.node_id.node_id == "n0"
    assert _operations(node) == ["NODE_TRANSITION", "NODE_SETUP", "NODE_RESET", "NODE_TEARDOWN"]
    attempts = [s for s in node.spans if s.task_id.retry_attempt or s.task_id.task_id.name]
    assert [a.task_id.retry_attempt for a in attempts] == [0, 1]
    assert _operations(attempts[1]) == ["TASK_SETUP", "TASK_RUNTIME", "TASK_TEARDOWN"]
    for parent in (span, node, *attempts):
        for child in parent.spans:
            assert child.start_time.ToNanoseconds() <= child.end_time.ToNanoseconds(), child


def test_execution_metrics_cover_every_node_kind(server, tmp_path):
    from flyteidl.admin import execution_pb2

    code = copy_workflows(tmp_path / "wf", "all_kinds.py")
    name = run_remote(server, code, "all_kinds.py", "all_kinds_wf")
    remote = remote_for(server)
    ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                     poll_interval=timedelta(seconds=0.5))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    with grpc.insecure_channel(server.endpoint) as channel:
        span = admin_pb2_grpc.AdminServiceStub(channel).GetExecutionMetrics(
            execution_pb2.WorkflowExecutionGetMetricsRequest(id=ex.id.to_flyte_idl(), depth=10), timeout=60).span

    def walk(s, found):
        for child in s.spans:
            if child.operation_id:
                found.setdefault(s.node_id.node_id or s.workflow_id.name, []).append(child.operation_id)
            walk(child, found)
        return found

    found = walk(span, {})
    nodes = {s.node_id.node_id: s for s in span.spans if s.node_id.node_id}
    assert len(nodes) == 7, sorted(nodes)  # inc, sub, the branch, fan, the launch plan, the gate, the map
    assert "NODE_IDLE" in sum(found.values(), [])  # the gate waited
    # The subworkflow's, the dynamic task's and the launch plan's own nodes have spans of their own.
    inner = [s for node in nodes.values() for s in node.spans if s.node_id.node_id or s.workflow_id.name]
    assert len(inner) >= 4, [str(s.node_id) for s in inner]
