"""The console's typed form posts: a signal's value converted by the signal's type, launches with their options
and relaunches, and launch errors."""

from __future__ import annotations

from datetime import datetime, timezone

import requests
from flyteidl.admin import execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T

from flytelite.admin.service import AdminService
from flytelite.store.models import Signal
from tests.admin.execution_harness import pipeline, pipeline_fixed, register

NOW = datetime(2026, 1, 2, tzinfo=timezone.utc)


def add_signal(ctx, execution: str, signal_id: str, lt: T.LiteralType) -> None:
    with ctx.db.session() as s:
        s.add(Signal(project="flytesnacks", domain="development", execution_name=execution, signal_id=signal_id,
                     type_pb=lt.SerializeToString(), value_pb=None, created_at=NOW, updated_at=NOW))


def post_signal(console, value: str, signal_id: str = "count"):
    return requests.post(f"{console.url}/console/api/signals", json={
        "project": "flytesnacks", "domain": "development", "execution": "ex1", "signal_id": signal_id,
        "value": value})


def test_signal_value_is_converted_by_the_signals_type(console):
    ctx = console.ctx
    add_signal(ctx, "ex1", "count", T.LiteralType(simple=T.SimpleType.INTEGER))
    wrong = post_signal(console, "lots")
    assert wrong.status_code == 400 and "count: 'lots' does not fit type INTEGER" in wrong.json()["error"]
    assert post_signal(console, "12").json() == {"ok": True}
    with ctx.db.session() as s:
        row = s.get(Signal, ("flytesnacks", "development", "ex1", "count"))
        assert L.Literal.FromString(row.value_pb).scalar.primitive.integer == 12
    missing = post_signal(console, "1", signal_id="other")
    assert missing.status_code == 404 and "has no signal 'other' (yet)" in missing.json()["error"]


def test_launch_errors_come_back_as_json(console):
    resp = requests.post(f"{console.url}/console/api/launch", json={
        "kind": "launch_plan", "project": "flytesnacks", "domain": "development", "name": "nope", "version": "v1"})
    assert resp.status_code == 404 and "nope" in resp.json()["error"]
    assert requests.post(f"{console.url}/console/api/launch", data=b"[1]").status_code == 400
    assert requests.post(f"{console.url}/console/api/launch", json={"kind": "workflow"}).json()["error"].startswith(
        "cannot launch a 'workflow'")


def test_forms_that_are_not_what_an_action_reads_are_400(console):
    for action in ("launch", "signals"):
        for body in (b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000):
            resp = requests.post(f"{console.url}/console/api/{action}", data=body)
            assert resp.status_code == 400, (action, resp.text[:200])
            assert "the form is not JSON in UTF-8" in resp.json()["error"]
    for form, message in [({"kind": {"a": 1}}, "cannot launch a {'a': 1}"),
                          ({"kind": ["task"]}, "cannot launch a ['task']"),
                          ({"name": "x", "inputs": ["a"]}, "inputs must map input names to their text")]:
        resp = requests.post(f"{console.url}/console/api/launch", json={"project": "flytesnacks",
                                                                         "domain": "development", **form})
        assert resp.status_code == 400, resp.text[:300]
        assert message in resp.json()["error"]


def test_launch_options_and_relaunch_reach_the_execution_spec(console):
    admin = AdminService(console.ctx)
    register(admin, pipeline, "v1")
    form = {"kind": "launch_plan", "project": "flytesnacks", "domain": "development",
            "name": "tests.admin.execution_harness.pipeline", "version": "v1", "inputs": {"x": "5"}}

    def launch(**extra):
        return requests.post(f"{console.url}/console/api/launch", json={**form, **extra})

    first = launch(options={"labels": "team=ml, tier = gold", "annotations": "note=from the console",
                            "max_parallelism": "3", "raw_output_prefix": "s3://bucket/raw", "overwrite_cache": "true"})
    assert first.status_code == 200, first.text
    spec = execution(admin, first.json()["id"]["name"]).spec
    assert dict(spec.labels.values) == {"team": "ml", "tier": "gold"}
    assert dict(spec.annotations.values) == {"note": "from the console"}
    assert spec.max_parallelism == 3 and spec.overwrite_cache
    assert spec.raw_output_data_config.output_location_prefix == "s3://bucket/raw"
    assert spec.metadata.mode == execution_pb2.ExecutionMetadata.MANUAL

    again = launch(relaunch_of=first.json()["id"]["name"], options={"labels": ""})
    assert again.status_code == 200, again.text
    spec = execution(admin, again.json()["id"]["name"]).spec
    assert spec.metadata.mode == execution_pb2.ExecutionMetadata.RELAUNCH
    assert spec.metadata.reference_execution.name == first.json()["id"]["name"]
    assert not spec.labels.values and not spec.overwrite_cache
    relaunch = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/"
                            f"{again.json()['id']['name']}")
    assert f">{first.json()['id']['name']}</a>" in relaunch.text and "relaunch of" in relaunch.text

    for extra, status, message in [
            ({"relaunch_of": "gone"}, 404, "gone"),
            ({"options": {"labels": "team"}}, 400, "labels must be key=value pairs separated by commas, got 'team'"),
            ({"options": {"max_parallelism": "-1"}}, 400, "max parallelism must be a whole number"),
            ({"options": {"colour": "red"}}, 400, "unknown launch options ['colour']"),
            ({"options": ["labels"]}, 400, "options must map option names to their text")]:
        resp = launch(**extra)
        assert resp.status_code == status and message in resp.json()["error"], (extra, resp.text)


def test_relaunch_page_fills_the_form_with_the_executions_inputs_and_options(console):
    admin = AdminService(console.ctx)
    register(admin, pipeline, "v1")
    register(admin, pipeline, "v2")
    launched = requests.post(f"{console.url}/console/api/launch", json={
        "kind": "launch_plan", "project": "flytesnacks", "domain": "development",
        "name": "tests.admin.execution_harness.pipeline", "version": "v1", "inputs": {"x": "41"},
        "options": {"labels": "team=ml"}}).json()["id"]["name"]
    page = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/{launched}"
                        "/relaunch")
    assert page.status_code == 200
    assert "data-input='x' data-kind='int' value='41'" in page.text
    assert "data-option='labels' value='team=ml'" in page.text
    assert '&quot;relaunch_of&quot;: &quot;' + launched in page.text
    # A relaunch launches the source's version; the workflow's page offers a version picker (its one launch
    # plan leaves nothing to pick there).
    assert "<select data-navigate>" not in page.text
    workflow = requests.get(f"{console.url}/console/projects/flytesnacks/workflows/tests.admin.execution_harness."
                            "pipeline?domain=development&version=v1").text
    assert workflow.count("<select data-navigate>") == 1
    assert "<option value='/console/projects/flytesnacks/workflows/tests.admin.execution_harness.pipeline?" \
           "domain=development&amp;version=v2'>v2</option>" in workflow
    register(admin, pipeline_fixed, "v1")
    both = requests.get(f"{console.url}/console/projects/flytesnacks/workflows/tests.admin.execution_harness."
                        "pipeline?domain=development&version=v1").text
    assert both.count("<select data-navigate>") == 2
    assert "<option value='/console/projects/flytesnacks/launchPlans/pipeline_fixed?domain=development'>" \
           "pipeline_fixed</option>" in both
    missing = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/gone/relaunch")
    assert missing.status_code == 404


def execution(admin, name: str):
    return admin.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=idpb.WorkflowExecutionIdentifier(
        project="flytesnacks", domain="development", name=name)), None)
