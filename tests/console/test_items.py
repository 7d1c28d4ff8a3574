"""An array node's items page and an item's page, over rows and blobs laid out as the engine writes them."""

from __future__ import annotations

import re

import requests
from flyteidl.admin import node_execution_pb2 as N
from flyteidl.admin import task_execution_pb2 as TE
from flyteidl.core import errors_pb2
from flyteidl.core import execution_pb2 as E
from flyteidl.core import literals_pb2 as L

from flytelite.console.items_page import PAGE_SIZE
from flytelite.idl.times import to_timestamp
from flytelite.store.models import NodeExecution, TaskExecution
from tests.console.test_pages import T0, add_execution

SIZE = 250
FAILED = {7, 130, 229}  # failed on both attempts
RETRIED = {3}  # failed once, then succeeded
RUNNING = {200}


def add_map(ctx, execution: str) -> str:
    """A map node n0 over SIZE items as the engine leaves it: inputs, each item's outputs or error, and the
    array's task execution with one external resource per item attempt. Returns the node's data dir."""
    add_execution(ctx, execution, E.WorkflowExecution.RUNNING)
    data_dir = f"{ctx.blobs.execution_dir('flytesnacks', 'development', execution)}/n0/data"
    xs = L.Literal(collection=L.LiteralCollection(literals=[
        L.Literal(scalar=L.Scalar(primitive=L.Primitive(integer=i * 10))) for i in range(SIZE)]))
    ctx.blobs.write_proto(f"{data_dir}/inputs.pb", L.LiteralMap(literals={"x": xs}))
    closure = TE.TaskExecutionClosure(phase=E.TaskExecution.RUNNING, started_at=to_timestamp(T0))
    for i in range(SIZE - 20):  # the last 20 items have not started
        attempts = 2 if i in FAILED | RETRIED else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            phase = (E.TaskExecution.RUNNING if i in RUNNING else
                     E.TaskExecution.FAILED if i in FAILED or not last else E.TaskExecution.SUCCEEDED)
            resource = closure.metadata.external_resources.add(index=i, retry_attempt=attempt, phase=phase)
            resource.logs.add(name=f"local log-{i}", uri=f"{ctx.public_url}/logs/{execution}/n0-n{i}-{attempt}.log")
            item_dir = f"{data_dir}/0/{i}/{attempt}"
            if phase == E.TaskExecution.FAILED:
                ctx.blobs.write_proto(f"{item_dir}/error.pb", errors_pb2.ErrorDocument(error=errors_pb2.ContainerError(
                    code="USER:ValueError", message=f"Traceback ...\nValueError: item {i} attempt {attempt}")))
            elif phase == E.TaskExecution.SUCCEEDED:
                ctx.blobs.write_proto(f"{item_dir}/outputs.pb", L.LiteralMap(literals={
                    "o0": L.Literal(scalar=L.Scalar(primitive=L.Primitive(integer=i * 100)))}))
    with ctx.db.session() as s:
        s.add(NodeExecution(project="flytesnacks", domain="development", execution_name=execution, node_id="n0",
                            phase=E.NodeExecution.RUNNING, input_uri=f"{data_dir}/inputs.pb",
                            closure_pb=N.NodeExecutionClosure(phase=E.NodeExecution.RUNNING).SerializeToString(),
                            metadata_pb=N.NodeExecutionMetaData(spec_node_id="n0", is_array=True).SerializeToString(),
                            created_at=T0, updated_at=T0))
        s.add(TaskExecution(project="flytesnacks", domain="development", execution_name=execution, node_id="n0",
                            task_project="flytesnacks", task_domain="development", task_name="wf.square",
                            task_version="v1", retry_attempt=0, phase=E.TaskExecution.RUNNING,
                            closure_pb=closure.SerializeToString(), created_at=T0, updated_at=T0))
    return data_dir


def items_url(console, execution: str, suffix: str = "") -> str:
    return (f"{console.url}/console/projects/flytesnacks/domains/development/executions/{execution}/nodes/n0/items"
            + suffix)


def shown(body: str) -> list[int]:
    return [int(i) for i in re.findall(r"<tr data-item='(\d+)'", body)]


def test_the_execution_page_links_the_items_of_its_map_node(console):
    add_map(console.ctx, "mapped")
    body = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/mapped").text
    assert "href='/console/projects/flytesnacks/domains/development/executions/mapped/nodes/n0/items'>see the " \
           "items</a>" in body


def test_items_are_listed_failed_first_a_page_at_a_time(console):
    add_map(console.ctx, "mapped")
    first = requests.get(items_url(console, "mapped"))
    assert first.status_code == 200
    body = first.text
    # The summary counts every item, unstarted ones too, and each count filters the list.
    summary = re.sub("<[^>]+>", "", body[body.index("<p class='summary'>"):body.index("Showing")])
    assert summary.split(" · ") == ["all 250", "3 failed", "1 running", "20 not started", "226 succeeded"], summary
    assert "<a data-phase='FAILED' href='/console/projects/flytesnacks/domains/development/executions/mapped/" \
           "nodes/n0/items?phase=FAILED'>3 failed</a>" in body
    assert shown(body)[:5] == [7, 130, 229, 200, 230] and len(shown(body)) == PAGE_SIZE
    assert "Showing items 1–100 of 250, failed first." in body
    # A failed item shows its last attempt's error; each item links its log and its own page.
    row = body[body.index("<tr data-item='130'"):]
    row = row[:row.index("</tr>")]
    assert "ValueError: item 130 attempt 1" in row and "local log-130" in row
    assert "data-log='/logs/mapped/n0-n130-1.log'" in row
    assert "href='/console/projects/flytesnacks/domains/development/executions/mapped/nodes/n0/items/130'" in row
    last = requests.get(items_url(console, "mapped", "?page=2")).text
    assert len(shown(last)) == 50 and shown(last)[-1] == 228 and "Previous page" in last
    assert "Next page" not in last
    failed = requests.get(items_url(console, "mapped", "?phase=FAILED")).text
    assert shown(failed) == [7, 130, 229] and "Showing items 1–3 of 3, failed first." in failed
    waiting = requests.get(items_url(console, "mapped", "?phase=NOT_STARTED")).text
    assert shown(waiting) == list(range(230, 250))


def test_an_item_page_has_its_attempts_errors_inputs_and_outputs(console):
    add_map(console.ctx, "mapped")
    retried = requests.get(items_url(console, "mapped", "/3")).text
    assert "Item #3 of node n0" in retried
    assert "<tr data-attempt='0'>" in retried and "ValueError: item 3 attempt 0" in retried
    assert "<tr data-attempt='1'>" in retried
    assert "<td>x</td><td><pre>30</pre></td>" in retried and "<td>o0</td><td><pre>300</pre></td>" in retried
    failed = requests.get(items_url(console, "mapped", "/229")).text
    assert "ValueError: item 229 attempt 1" in failed and "none: the item failed" in failed
    waiting = requests.get(items_url(console, "mapped", "/240")).text
    assert "Not started yet." in waiting and "<td>x</td><td><pre>2400</pre></td>" in waiting


def test_bad_item_addresses_say_what_is_wrong(console):
    add_map(console.ctx, "mapped")
    for suffix, status, words in [("/250", 404, "has 250 items: there is no item 250"),
                                  ("?phase=BROKEN", 400, "phase &#x27;BROKEN&#x27; is not one of"),
                                  ("?page=x", 400, "page must be a whole number"),
                                  ("?attempt=3", 404, "has no array node n0 with an attempt 3")]:
        resp = requests.get(items_url(console, "mapped", suffix))
        assert resp.status_code == status and words in resp.text, (suffix, resp.status_code, resp.text[-400:])
    resp = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/mapped/nodes/"
                        "n9/items")
    assert resp.status_code == 404 and "has no array node n9" in resp.text
