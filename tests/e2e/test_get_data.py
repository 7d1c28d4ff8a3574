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


