"""The console pages over a real SQLite store and blob folder, fetched from a real HTTP server."""

from __future__ import annotations

import html
from datetime import datetime, timedelta, timezone

import requests
from flyteidl.admin import execution_pb2 as A
from flyteidl.admin import node_execution_pb2 as N
from flyteidl.admin import task_execution_pb2 as TE
from flyteidl.core import execution_pb2 as E
from flyteidl.core import identifier_pb2 as I
from flyteidl.core import literals_pb2 as L

from flytelite.idl.times import to_duration, to_timestamp
from flytelite.store.models import Execution, NodeExecution, TaskExecution

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
EVIL = "<script>alert('pwned')</script>"


def ints(**values) -> L.LiteralMap:
    return L.LiteralMap(literals={k: L.Literal(scalar=L.Scalar(primitive=L.Primitive(integer=v)))
                                  for k, v in values.items()})


def add_execution(ctx, name: str, phase: int, error: str = "", outputs: L.LiteralMap | None = None) -> None:
    wfdir = ctx.blobs.execution_dir("flytesnacks", "development", name)
    inputs_uri = f"{wfdir}/inputs.pb"
    ctx.blobs.write_proto(inputs_uri, L.LiteralMap(literals={
        "a": L.Literal(scalar=L.Scalar(primitive=L.Primitive(integer=5))),
        "s": L.Literal(scalar=L.Scalar(primitive=L.Primitive(string_value=EVIL))),
    }))
    closure = A.ExecutionClosure(phase=phase, started_at=to_timestamp(T0), created_at=to_timestamp(T0),
                                 duration=to_duration(timedelta(seconds=75)),
                                 workflow_id=I.Identifier(resource_type=I.WORKFLOW, project="flytesnacks",
                                                          domain="development", name="wf.hello", version="v1"))
    if outputs is not None:
        closure.outputs.uri = f"{wfdir}/end-node/data/0/outputs.pb"
        ctx.blobs.write_proto(closure.outputs.uri, outputs)
    if error:
        closure.error.CopyFrom(E.ExecutionError(code="USER:ValueError", message=error, kind=E.ExecutionError.USER))
    spec = A.ExecutionSpec(launch_plan=I.Identifier(resource_type=I.LAUNCH_PLAN, project="flytesnacks",
                                                    domain="development", name="wf.hello", version="v1"))
    with ctx.db.session() as s:
        s.add(Execution(project="flytesnacks", domain="development", name=name, launch_plan_name="wf.hello",
                        launch_plan_version="v1", workflow_name="wf.hello", workflow_version="v1", phase=phase,
                        spec_pb=spec.SerializeToString(), closure_pb=closure.SerializeToString(),
                        inputs_uri=inputs_uri, created_at=T0, updated_at=T0, started_at=T0))


def add_node(ctx, execution: str, node_id: str, phase: int, parent_id: int | None = None, spec_node_id: str = "",
             outputs: L.LiteralMap | None = None, error: str = "") -> int:
    wfdir = ctx.blobs.execution_dir("flytesnacks", "development", execution)
    input_uri = f"{wfdir}/{node_id}/data/inputs.pb"
    ctx.blobs.write_proto(input_uri, ints(x=1))
    closure = N.NodeExecutionClosure(phase=phase, started_at=to_timestamp(T0 + timedelta(seconds=1)),
                                     duration=to_duration(timedelta(seconds=2.5)))
    if outputs is not None:
        closure.output_uri = f"{wfdir}/{node_id}/data/0/outputs.pb"
        ctx.blobs.write_proto(closure.output_uri, outputs)
    if error:
        closure.error.CopyFrom(E.ExecutionError(code="USER:Boom", message=error))
    meta = N.NodeExecutionMetaData(spec_node_id=spec_node_id or node_id, is_parent_node=False)
    with ctx.db.session() as s:
        row = NodeExecution(project="flytesnacks", domain="development", execution_name=execution, node_id=node_id,
                            parent_id=parent_id, phase=phase, input_uri=input_uri,
                            closure_pb=closure.SerializeToString(), metadata_pb=meta.SerializeToString(),
                            created_at=T0, updated_at=T0)
        s.add(row)
        s.flush()
        return row.id


def add_attempt(ctx, execution: str, node_id: str, attempt: int, phase: int, log_uri: str, error: str = "",
                reasons: tuple[str, ...] = ()) -> None:
    closure = TE.TaskExecutionClosure(phase=phase, logs=[E.TaskLog(name="local log", uri=log_uri)],
                                      started_at=to_timestamp(T0), duration=to_duration(timedelta(seconds=1)))
    for message in reasons:
        closure.reasons.add(occurred_at=to_timestamp(T0), message=message)
    closure.reason = reasons[-1] if reasons else ""
    if error:
        closure.error.CopyFrom(E.ExecutionError(code="USER:Boom", message=error))
    with ctx.db.session() as s:
        s.add(TaskExecution(project="flytesnacks", domain="development", execution_name=execution, node_id=node_id,
                            task_project="flytesnacks", task_domain="development", task_name="wf.t1",
                            task_version="v1", retry_attempt=attempt, phase=phase,
                            closure_pb=closure.SerializeToString(), created_at=T0, updated_at=T0))


def page(console, name: str) -> requests.Response:
    return requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/{name}")


def test_succeeded_execution_page(console):
    ctx = console.ctx
    add_execution(ctx, "exec1", E.WorkflowExecution.SUCCEEDED, outputs=ints(o0=42))
    add_node(ctx, "exec1", "start-node", E.NodeExecution.SUCCEEDED)
    parent = add_node(ctx, "exec1", "n0", E.NodeExecution.SUCCEEDED, outputs=ints(y=6))
    add_node(ctx, "exec1", "n0-0-sub", E.NodeExecution.SUCCEEDED, parent_id=parent, spec_node_id="sub")
    add_attempt(ctx, "exec1", "n0", 0, E.TaskExecution.FAILED, f"{ctx.public_url}/logs/exec1/n0/0.log", error="flaky")
    add_attempt(ctx, "exec1", "n0", 1, E.TaskExecution.SUCCEEDED, f"{ctx.public_url}/logs/exec1/n0/1.log")

    resp = page(console, "exec1")
    assert resp.status_code == 200
    body = resp.text
    assert "flytesnacks / development / exec1" in body
    assert "data-running='0'" in body  # finished: the page stops refreshing
    assert ">SUCCEEDED<" in body and "2026-01-02 03:04:05 UTC" in body and "1m 15s" in body
    assert "wf.hello (v1)" in body
    # Inputs and outputs of the execution, rendered and escaped.
    assert "<td>a</td><td><pre>5</pre>" in body
    assert "<td>o0</td><td><pre>42</pre>" in body
    assert html.escape(repr(EVIL)) in body and EVIL not in body
    # Nodes: start-node hidden, the child indented under its parent, node data and attempts with logs.
    assert "start-node" not in body
    n0, sub = body.index(">n0<"), body.index("sub <span class='muted'>(n0-0-sub)</span>")
    assert n0 < sub
    assert "padding-left:34px'>sub" in body and "padding-left:10px'>n0" in body
    assert "<td>y</td><td><pre>6</pre>" in body
    assert f"href='{ctx.public_url}/logs/exec1/n0/0.log'" in body
    assert f"href='{ctx.public_url}/logs/exec1/n0/1.log'" in body
    assert "#0 <span class='phase bad'>FAILED</span>" in body and "flaky" in body
    assert "2.5s" in body


def test_failed_execution_shows_its_error(console):
    ctx = console.ctx
    add_execution(ctx, "exec2", E.WorkflowExecution.FAILED, error="task n0 failed: ValueError <bad>")
    add_node(ctx, "exec2", "n0", E.NodeExecution.FAILED, error="ValueError: <bad>")
    body = page(console, "exec2").text
    assert "<h2>Error</h2>" in body
    assert "[USER:ValueError] task n0 failed: ValueError &lt;bad&gt;" in body
    assert "[USER:Boom] ValueError: &lt;bad&gt;" in body


def test_running_execution_page_refreshes(console):
    ctx = console.ctx
    add_execution(ctx, "exec3", E.WorkflowExecution.RUNNING)
    body = page(console, "exec3").text
    assert "data-running='1'" in body and "<script src='/console/static/console.js'>" in body
    assert "data-action='terminate'" in body  # a running execution offers Terminate, not Relaunch
    script = requests.get(f"{console.url}/console/static/console.js")
    assert script.status_code == 200 and "setTimeout(refresh" in script.text
    assert "none yet" in body  # no outputs while running


def test_blob_outputs_link_to_signed_downloads(console):
    ctx = console.ctx
    blob_path = f"{ctx.blobs.raw_output_prefix()}/ab/cd/result.txt"
    ctx.blobs.write_bytes(blob_path, b"file content")
    outputs = L.LiteralMap(literals={"f": L.Literal(scalar=L.Scalar(blob=L.Blob(uri=blob_path)))})
    add_execution(ctx, "exec4", E.WorkflowExecution.SUCCEEDED, outputs=outputs)
    body = page(console, "exec4").text
    start = body.index("<a href=\"/dataproxy/download/")
    href = html.unescape(body[start:].split('"')[1])
    download = requests.get(console.url + href)
    assert download.status_code == 200 and download.content == b"file content"


def test_unknown_execution_is_a_404_page(console):
    resp = page(console, "nope")
    assert resp.status_code == 404
    assert "There is no execution nope in project flytesnacks, domain development." in resp.text
    assert "href='/console'" in resp.text


def test_index_lists_projects_and_the_executions_list_shows_runs(console):
    ctx = console.ctx
    resp = requests.get(f"{console.url}/console")
    assert resp.status_code == 200 and "data-project='flytesnacks'" in resp.text
    assert "href='/console/projects/flytesnacks/executions?domain=staging'" in resp.text
    listing = requests.get(f"{console.url}/console/projects/flytesnacks/executions?domain=development")
    assert listing.status_code == 200 and "No executions." in listing.text
    add_execution(ctx, "exec5", E.WorkflowExecution.SUCCEEDED)
    add_execution(ctx, "exec6", E.WorkflowExecution.FAILED)
    body = requests.get(f"{console.url}/console/projects/flytesnacks/executions").text
    assert "href='/console/projects/flytesnacks/domains/development/executions/exec5'>exec5</a>" in body
    failed = requests.get(f"{console.url}/console/projects/flytesnacks/executions?phase=FAILED").text
    assert "exec6" in failed and "exec5" not in failed
    bad = requests.get(f"{console.url}/console/projects/flytesnacks/executions?from=yesterday").text
    assert "&#x27;from&#x27; must be a date and time" in bad
    assert requests.get(console.url + "/", allow_redirects=False).headers["location"] == "/console"
    other = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/workflows/x")
    assert other.status_code == 404 and "no &#x27;workflows&#x27; pages" in other.text
    missing = requests.get(f"{console.url}/console/projects/flytesnacks/workflows/nope")
    assert missing.status_code == 404 and "there is no workflow nope in project flytesnacks" in missing.text
    elsewhere = requests.get(f"{console.url}/console/nothing/here")
    assert elsewhere.status_code == 404 and "/console/nothing/here" in elsewhere.text


def test_executions_list_with_a_token_out_of_range_says_so(console):
    add_execution(console.ctx, "exec7", E.WorkflowExecution.SUCCEEDED)
    for token in (str(2**63), "-1"):
        resp = requests.get(f"{console.url}/console/projects/flytesnacks/executions", params={"token": token})
        assert resp.status_code == 200, resp.text[:300]
        assert "invalid pagination token" in resp.text and "First page" in resp.text


def test_healthz_follows_ready(console):
    assert requests.get(f"{console.url}/healthz").status_code == 200
    console.ctx.ready = False
    assert requests.get(f"{console.url}/healthz").status_code == 503


def test_an_ended_attempt_says_how_it_ended_with_its_reasons_on_demand(console):
    ctx = console.ctx
    add_execution(ctx, "ended1", E.WorkflowExecution.RUNNING)
    add_node(ctx, "ended1", "n0", E.NodeExecution.SUCCEEDED)
    add_node(ctx, "ended1", "n1", E.NodeExecution.RUNNING)
    add_attempt(ctx, "ended1", "n0", 0, E.TaskExecution.SUCCEEDED, f"{ctx.public_url}/logs/ended1/n0/0.log",
                reasons=("task submitted", "running as pid 28326"))
    add_attempt(ctx, "ended1", "n1", 0, E.TaskExecution.RUNNING, f"{ctx.public_url}/logs/ended1/n1/0.log",
                reasons=("running as pid 4242",))
    html = page(console, "ended1").text
    row = html[html.index("data-node-row='n0'"):html.index("data-node-row='n1'")]
    assert "<span class='muted'>succeeded</span>" in row
    assert "<summary>reasons (2)</summary>" in row and "running as pid 28326</li>" in row
    assert "<span class='muted'>running as pid 28326</span>" not in row
    # A running attempt still shows what it is doing now.
    assert "<span class='muted'>running as pid 4242</span>" in html[html.index("data-node-row='n1'"):]
