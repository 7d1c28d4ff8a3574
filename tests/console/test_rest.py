"""Flyte's REST API (/api/v1) over the in-process servicers: paths, parameters, encodings and errors.

Served by build_app on a real HTTP server over a real SQLite store and blob folder.
"""

from __future__ import annotations

import requests
from flyteidl.admin import execution_pb2 as A
from flyteidl.admin import project_pb2
from flyteidl.core import execution_pb2 as E

from flytelite.console.rest import flyte_routes
from tests.console.test_pages import add_execution, add_node

JSON = {"Accept": "application/json"}


def test_routes_are_flytes_own_bindings():
    routes = {(r.method, r.template): r.rpc for r in flyte_routes()}
    assert routes[("GET", "/api/v1/executions/{id.project}/{id.domain}/{id.name}")] == "GetExecution"
    assert routes[("GET", "/api/v1/executions/{id.project}/{id.domain}")] == "ListExecutions"
    assert routes[("DELETE", "/api/v1/executions/{id.project}/{id.domain}/{id.name}")] == "TerminateExecution"
    assert routes[("POST", "/api/v1/executions/relaunch")] == "RelaunchExecution"
    assert routes[("POST", "/api/v1/executions/recover")] == "RecoverExecution"
    assert routes[("GET", "/api/v1/data/executions/{id.project}/{id.domain}/{id.name}")] == "GetExecutionData"
    assert routes[("GET", "/api/v1/tasks/{id.project}/{id.domain}")] == "ListTasks"  # an additional binding
    assert routes[("POST", "/api/v1/signals")] == "SetSignal"
    assert routes[("GET", "/api/v1/version")] == "GetVersion"
    assert len(routes) > 60


def test_projects_in_flytes_three_encodings(console):
    url = f"{console.url}/api/v1/projects"
    snake = requests.get(url, headers=JSON).json()["projects"][0]
    assert snake["id"] == "flytesnacks" and snake["state"] == "ACTIVE"
    assert snake["org"] == ""  # unpopulated scalars are printed, as the gateway's JSON does
    camel = requests.get(f"{console.url}/api/v1/executions/flytesnacks/development", headers={"Accept": "*/*"})
    assert camel.json() == {"executions": [], "token": ""}
    binary = requests.get(url, headers={"Accept": "application/octet-stream"})
    assert binary.headers["content-type"] == "application/octet-stream"
    assert project_pb2.Projects.FromString(binary.content).projects[0].id == "flytesnacks"
    version = requests.get(f"{console.url}/api/v1/version").json()
    # flytekit's get_control_plane_version (and its integration suite) expects a v-prefixed version.
    assert version["controlPlaneVersion"]["Version"].startswith("v")
    assert version["controlPlaneVersion"]["Build"] == "flytelite"


def test_execution_get_list_with_query_parameters_and_data(console):
    ctx = console.ctx
    for i, phase in enumerate([E.WorkflowExecution.SUCCEEDED, E.WorkflowExecution.FAILED,
                               E.WorkflowExecution.SUCCEEDED]):
        add_execution(ctx, f"rest{i}", phase)
    add_node(ctx, "rest0", "n0", E.NodeExecution.SUCCEEDED)
    base = f"{console.url}/api/v1/executions/flytesnacks/development"
    got = requests.get(f"{base}/rest0", headers=JSON).json()
    assert got["id"]["name"] == "rest0" and got["closure"]["phase"] == "SUCCEEDED"
    assert got["spec"]["launch_plan"]["name"] == "wf.hello"

    page1 = requests.get(base, headers=JSON, params={"limit": 2, "sort_by.key": "name",
                                                      "sort_by.direction": "ASCENDING"}).json()
    assert [e["id"]["name"] for e in page1["executions"]] == ["rest0", "rest1"] and page1["token"] == "2"
    page2 = requests.get(base, headers=JSON, params={"limit": 2, "token": page1["token"], "sort_by.key": "name",
                                                      "sort_by.direction": "ASCENDING"}).json()
    assert [e["id"]["name"] for e in page2["executions"]] == ["rest2"] and page2["token"] == ""
    failed = requests.get(base, headers=JSON, params={"filters": "eq(phase,FAILED)"}).json()
    assert [e["id"]["name"] for e in failed["executions"]] == ["rest1"]

    data = requests.get(f"{console.url}/api/v1/data/executions/flytesnacks/development/rest0", headers=JSON).json()
    assert data["full_inputs"]["literals"]["a"]["scalar"]["primitive"]["integer"] == "5"
    nodes = requests.get(f"{console.url}/api/v1/node_executions/flytesnacks/development/rest0", headers=JSON).json()
    assert [n["id"]["node_id"] for n in nodes["node_executions"]] == ["n0"]


def test_post_and_delete_run_the_servicer_with_the_body(console):
    ctx = console.ctx
    add_execution(ctx, "running1", E.WorkflowExecution.RUNNING)
    add_execution(ctx, "done1", E.WorkflowExecution.SUCCEEDED)
    url = f"{console.url}/api/v1/executions/flytesnacks/development"
    ok = requests.delete(f"{url}/running1", json={"id": {"project": "flytesnacks", "domain": "development",
                                                          "name": "running1"}, "cause": "from curl"})
    assert ok.status_code == 200, ok.text
    closure = requests.get(f"{url}/running1", headers=JSON).json()["closure"]
    assert closure["phase"] == "ABORTING" and closure["abort_metadata"]["cause"] == "from curl"
    # Path parameters win over the body, as grpc-gateway fills them last.
    done = requests.delete(f"{url}/done1", json={"cause": "too late"})
    assert done.status_code == 412
    body = done.json()
    assert body["code"] == 9 and "already finished (SUCCEEDED)" in body["error"] and body["message"] == body["error"]
    # The body may also be protobuf.
    request = A.ExecutionTerminateRequest(cause="binary")
    resp = requests.delete(f"{url}/done1", data=request.SerializeToString(),
                           headers={"Content-Type": "application/octet-stream"})
    assert resp.status_code == 412


def test_errors_are_json_with_flyte_codes(console):
    missing = requests.get(f"{console.url}/api/v1/executions/flytesnacks/development/nope", headers=JSON)
    assert missing.status_code == 404 and missing.json()["code"] == 5
    bad_filter = requests.get(f"{console.url}/api/v1/executions/flytesnacks/development",
                              params={"filters": "eq(colour,red)"})
    assert bad_filter.status_code == 400 and "cannot filter on 'colour'" in bad_filter.json()["error"]
    bad_param = requests.get(f"{console.url}/api/v1/executions/flytesnacks/development", params={"limit": "many"})
    assert bad_param.status_code == 400 and "parameter 'limit': 'many' is not a valid value" in bad_param.json()["error"]
    unknown_param = requests.get(f"{console.url}/api/v1/projects", params={"colour": "red"})
    assert unknown_param.status_code == 400 and "has no field 'colour'" in unknown_param.json()["error"]
    bad_body = requests.post(f"{console.url}/api/v1/executions", data=b"{not json")
    assert bad_body.status_code == 400 and "not a valid flyteidl.admin.ExecutionCreateRequest" in bad_body.json()["error"]
    no_signal = requests.post(f"{console.url}/api/v1/signals", json={
        "id": {"execution_id": {"project": "flytesnacks", "domain": "development", "name": "x"}, "signal_id": "s"},
        "value": {"scalar": {"primitive": {"boolean": True}}}})
    assert no_signal.status_code == 404 and "a gate node creates its signal when it starts" in no_signal.json()["error"]
    unimplemented = requests.post(f"{console.url}/api/v1/events/workflows", json={})
    assert unimplemented.status_code == 501 and "CreateWorkflowEvent is not served" in unimplemented.json()["error"]
    nowhere = requests.get(f"{console.url}/api/v1/nowhere")
    assert nowhere.status_code == 404 and "no Flyte REST API at GET /api/v1/nowhere" in nowhere.json()["error"]


def test_enum_path_parameters_take_names_or_numbers(console):
    for resource_type in ("LAUNCH_PLAN", "3"):
        resp = requests.get(f"{console.url}/api/v1/named_entities/{resource_type}/flytesnacks/development",
                            headers=JSON)
        assert resp.status_code == 200, resp.text
        assert resp.json()["entities"] == []


def test_numbers_outside_their_fields_range_are_400(console):
    base = f"{console.url}/api/v1/executions/flytesnacks/development"
    for limit in ("-1", str(2**32)):
        resp = requests.get(base, params={"limit": limit}, headers=JSON)
        assert resp.status_code == 400, resp.text
        assert resp.json()["code"] == 3
        assert f"parameter 'limit': '{limit}' is out of range for a uint32" in resp.json()["error"]
    for token in (str(2**63), "99999999999999999999", "-5"):
        resp = requests.get(base, params={"token": token}, headers=JSON)
        assert resp.status_code == 400 and "invalid pagination token" in resp.json()["error"], resp.text
    resp = requests.get(base, params={"filters": "gte(duration,abc)"}, headers=JSON)
    assert resp.status_code == 400 and "filter on 'duration': 'abc'" in resp.json()["error"], resp.text


def test_unknown_enum_values_in_bodies_are_400(console):
    task = requests.post(f"{console.url}/api/v1/tasks", json={
        "id": {"resourceType": 999, "project": "flytesnacks", "domain": "development", "name": "t", "version": "v"}})
    assert task.status_code == 400 and "999 (not a ResourceType value)" in task.json()["error"], task.text
    link = requests.post(f"{console.url}/api/v1/dataproxy/artifact_link", json={"artifactType": 999})
    assert link.status_code == 400 and "got 999 (not a ArtifactType value)" in link.json()["error"], link.text


def test_a_huge_value_in_a_body_is_not_echoed_whole(console):
    resp = requests.post(f"{console.url}/api/v1/executions", json={
        "project": "flytesnacks", "domain": "development", "name": "x" * (1 << 20)})
    assert resp.status_code == 400, resp.text[:300]
    assert "more characters" in resp.json()["error"] and len(resp.content) < 20_000
