"""Details of the console's pages: 404s for a missing project, what a node without outputs says, phases and
states told apart by colour, attempts that never reported RUNNING, folders' files, entity pages' tables and
the audit trail's place in the menu, a cache hit's source."""

from __future__ import annotations

from datetime import timedelta

import requests
from flyteidl.admin import launch_plan_pb2
from flyteidl.admin import node_execution_pb2 as N
from flyteidl.admin import task_execution_pb2 as TE
from flyteidl.core import catalog_pb2
from flyteidl.core import execution_pb2 as E
from flyteidl.core import identifier_pb2 as I
from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T

from flytelite.admin.audit import AuditLog, Caller
from flytelite.admin.service import AdminService
from flytelite.idl.times import to_timestamp
from flytelite.store.models import NodeExecution, TaskExecution
from tests.admin.execution_harness import pipeline, pipeline_fixed, register
from tests.console.test_pages import T0, add_execution, add_node, page


def test_the_pages_of_a_project_that_does_not_exist_are_404(console):
    for path in ("executions", "schedules", "workflows", "tasks", "launchPlans"):
        resp = requests.get(f"{console.url}/console/projects/nope/{path}?domain=development")
        assert resp.status_code == 404, path
        assert "nope" in resp.text
    assert requests.get(f"{console.url}/console/projects/flytesnacks/executions").status_code == 200


def test_a_node_without_outputs_says_why(console):
    ctx = console.ctx
    add_execution(ctx, "fails", E.WorkflowExecution.FAILED, error="n0 failed")
    add_node(ctx, "fails", "n0", E.NodeExecution.FAILED, error="ValueError: boom")
    add_node(ctx, "fails", "n1", E.NodeExecution.ABORTED)
    body = page(console, "fails").text
    assert "<h4>Inputs</h4>" in body
    assert "<h4>Outputs</h4><span class='muted'>none: the node failed</span>" in body
    assert "<h4>Outputs</h4><span class='muted'>none: the node was aborted</span>" in body


def test_aborted_is_told_apart_from_failed_and_active_from_inactive(console):
    ctx = console.ctx
    add_execution(ctx, "stopped", E.WorkflowExecution.ABORTED)
    add_execution(ctx, "broken", E.WorkflowExecution.FAILED, error="x")
    assert "<span class='phase stop'>ABORTED</span>" in page(console, "stopped").text
    assert "<span class='phase bad'>FAILED</span>" in page(console, "broken").text
    listing = requests.get(f"{console.url}/console/projects/flytesnacks/executions").text
    assert "<span class='phase stop'>ABORTED</span>" in listing and "<span class='phase bad'>FAILED</span>" in listing

    admin = AdminService(ctx)
    register(admin, pipeline_fixed, "v1")
    register(admin, pipeline_fixed, "v2")
    lp = I.Identifier(resource_type=I.LAUNCH_PLAN, project="flytesnacks", domain="development",
                      name="pipeline_fixed", version="v2")
    admin.UpdateLaunchPlan(launch_plan_pb2.LaunchPlanUpdateRequest(id=lp, state=launch_plan_pb2.ACTIVE), None)
    body = requests.get(f"{console.url}/console/projects/flytesnacks/launchPlans/pipeline_fixed"
                        "?domain=development&version=v1").text
    versions = body[body.index("<h2>Versions</h2>"):]
    assert versions.count("<span class='phase active'>ACTIVE</span>") == 1
    assert versions.count("<span class='phase inactive'>INACTIVE</span>") == 1
    # The version shown is marked, and every tag the table opens it closes.
    assert "<tr class=current><td><a href='/console/projects/flytesnacks/launchPlans/pipeline_fixed?domain=" \
           "development&amp;version=v1'>v1</a> <span class=muted>(shown)</span>" in versions
    assert body.count("<b>") == body.count("</b>")


def test_entity_pages_of_a_workflow_close_their_tags(console):
    admin = AdminService(console.ctx)
    register(admin, pipeline, "v1")
    register(admin, pipeline, "v2")
    body = requests.get(f"{console.url}/console/projects/flytesnacks/workflows/tests.admin.execution_harness."
                        "pipeline?domain=development").text
    assert "v2</a> <span class=muted>(shown)</span>" in body
    assert body.count("<b>") == body.count("</b>") and body.count("<tr") == body.count("</tr>")
    plan = requests.get(f"{console.url}/console/projects/flytesnacks/launchPlans/tests.admin.execution_harness."
                        "pipeline?domain=development").text
    # Every column of the inputs table has a heading.
    assert "<th></th>" not in plan
    assert "<th>Name</th><th>Type</th><th>Required or default</th><th>Description</th>" in plan
    assert "<td>default 3</td>" in plan


def _row(model, closure, **fields):
    return model(project="flytesnacks", domain="development", closure_pb=closure.SerializeToString(),
                 created_at=T0, updated_at=T0 + timedelta(seconds=3), **fields)


def test_an_attempt_that_never_reported_running_has_a_start_and_a_bar(console):
    # A task that ends within the round that queued it goes from QUEUED to SUCCEEDED: no RUNNING event, so
    # neither the node nor the attempt has a start time (as in FlyteAdmin).
    ctx = console.ctx
    add_execution(ctx, "quick", E.WorkflowExecution.SUCCEEDED)
    created, updated = to_timestamp(T0), to_timestamp(T0 + timedelta(seconds=3))
    with ctx.db.session() as s:
        s.add(_row(NodeExecution, N.NodeExecutionClosure(phase=E.NodeExecution.SUCCEEDED, created_at=created,
                                                         updated_at=updated),
                   execution_name="quick", node_id="dn0", phase=E.NodeExecution.SUCCEEDED, input_uri="",
                   metadata_pb=N.NodeExecutionMetaData(spec_node_id="n0").SerializeToString()))
        s.add(_row(TaskExecution, TE.TaskExecutionClosure(phase=E.TaskExecution.SUCCEEDED, created_at=created,
                                                          updated_at=updated),
                   execution_name="quick", node_id="dn0", task_project="flytesnacks", task_domain="development",
                   task_name="wf.t1", task_version="v1", retry_attempt=0, phase=E.TaskExecution.SUCCEEDED))
    body = page(console, "quick").text
    row = body[body.index("<tr data-node-row='dn0'"):]
    row = row[:row.index("</tr>")]
    assert "<td><time datetime='2026-01-02T03:04:05+00:00'>2026-01-02 03:04:05 UTC</time></td><td>3.0s</td>" in row
    assert "#0 <span class='phase ok'>SUCCEEDED</span> 3.0s" in row
    for key in ("dn0", "dn0#0"):
        bar = body[body.index(f"data-gantt='{key}'"):]
        assert bar[:bar.index("</div></div>")].count("class='bar ok'") == 1, key


def test_a_folder_output_links_each_of_its_files(console):
    ctx = console.ctx
    frame = f"{ctx.blobs.raw_output_prefix()}/ab/frame"
    ctx.blobs.write_bytes(f"{frame}/00000", b"parquet bytes")
    folder = f"{ctx.blobs.raw_output_prefix()}/cd/folder"
    ctx.blobs.write_bytes(f"{folder}/a.txt", b"a")
    ctx.blobs.write_bytes(f"{folder}/sub/b.txt", b"b")
    outputs = L.LiteralMap(literals={
        "df": L.Literal(scalar=L.Scalar(structured_dataset=L.StructuredDataset(uri=frame, metadata=L.StructuredDatasetMetadata(
            structured_dataset_type=T.StructuredDatasetType(format="parquet"))))),
        "dir": L.Literal(scalar=L.Scalar(blob=L.Blob(uri=folder, metadata=L.BlobMetadata(
            type=T.BlobType(dimensionality=T.BlobType.MULTIPART))))),
    })
    add_execution(ctx, "frames", E.WorkflowExecution.SUCCEEDED, outputs=outputs)
    body = page(console, "frames").text
    outputs_html = body[body.index("<h2>Outputs</h2>"):]
    links = {}
    for name in ("00000", "a.txt", "sub/b.txt"):
        at = outputs_html.index(f">{name}</a>")
        href = outputs_html[outputs_html.rindex('href="', 0, at) + 6:at - 1]
        links[name] = requests.get(console.url + href.replace("&amp;", "&"))
    assert {name: r.content for name, r in links.items()} == {"00000": b"parquet bytes", "a.txt": b"a",
                                                                "sub/b.txt": b"b"}
    assert "StructuredDataset(" in outputs_html and "format=&#x27;parquet&#x27;" in outputs_html


def test_the_audit_trail_is_in_the_menu_and_its_table_wraps(console):
    body = requests.get(f"{console.url}/console/projects/flytesnacks?domain=development").text
    assert "<a class='audit' href='/console/audit'>Audit trail</a>" in body
    AuditLog(console.ctx).record("create execution", ("flytesnacks", "development", "x" * 300),
                                 Caller("someone@example.com", "", "127.0.0.1"), "refused", "y " * 400)
    audit = requests.get(f"{console.url}/console/audit")
    assert audit.status_code == 200 and "<table class=audit>" in audit.text and "x" * 300 in audit.text


def test_a_cache_hit_links_the_execution_it_reused(console):
    ctx = console.ctx
    add_execution(ctx, "reuses", E.WorkflowExecution.SUCCEEDED)
    closure = N.NodeExecutionClosure(phase=E.NodeExecution.SUCCEEDED, created_at=to_timestamp(T0),
                                     updated_at=to_timestamp(T0))
    closure.task_node_metadata.cache_status = catalog_pb2.CACHE_HIT
    source = closure.task_node_metadata.catalog_key.source_task_execution.node_execution_id
    source.node_id = "n0"
    source.execution_id.project, source.execution_id.domain, source.execution_id.name = \
        "flytesnacks", "development", "earlier"
    with ctx.db.session() as s:
        s.add(_row(NodeExecution, closure, execution_name="reuses", node_id="n0", phase=E.NodeExecution.SUCCEEDED,
                   input_uri="", metadata_pb=N.NodeExecutionMetaData(spec_node_id="n0").SerializeToString()))
    body = page(console, "reuses").text
    assert "<span class='tag cache'>cache hit</span> <a class='cache-source' href='/console/projects/flytesnacks/" \
           "domains/development/executions/earlier'>from earlier</a>" in body
