"""Flyte 2's API on the public port, through flyteidl2's own connect clients: every service is there, what
flytelite does not serve says so by name, and a client's mistakes get the code that names them."""

from __future__ import annotations

import time
import urllib.request

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from flyteidl.admin.project_pb2 import ProjectGetRequest
from flyteidl.service import admin_pb2_grpc
from flyteidl2.actions import actions_service_connect, actions_service_pb2
from flyteidl2.auth import identity_connect, identity_pb2
from flyteidl2.cluster import payload_pb2, service_connect
from flyteidl2.common import identifier_pb2, list_pb2
from flyteidl2.dataproxy import dataproxy_service_connect, dataproxy_service_pb2
from flyteidl2.project import project_service_connect, project_service_pb2
from flyteidl2.task import task_definition_pb2
from flyteidl2.trigger import trigger_service_connect, trigger_service_pb2
from flyteidl2.workflow import run_service_connect, run_service_pb2
from google.protobuf import timestamp_pb2

from flytelite.connect.app import service_applications
from tests.e2e.flyte_cli import wait_for


def _a0_spec() -> task_definition_pb2.TaskSpec:
    """A Flyte 2 task whose image is the server's own interpreter, which has no flyte SDK: its run fails at once."""
    spec = task_definition_pb2.TaskSpec()
    spec.task_template.type = "python"
    spec.task_template.id.name = "hello.main"
    spec.task_template.container.image = "example.com/flyte:py3.11"
    spec.task_template.container.args.extend(["a0", "--inputs", "{{.input}}", "--outputs-path", "{{.outputPrefix}}"])
    return spec


def _failed(runs, name: str, project: str = "flytesnacks"):
    """Run `name`'s details once it failed."""
    def failed():
        details = runs.get_run_details(run_service_pb2.GetRunDetailsRequest(run_id=run_id(name, project))).details
        return details if details.action.status.phase == 6 else None  # FAILED

    return wait_for(failed, f"run {name} to fail", timeout=120)


def _code(call) -> tuple[Code, str]:
    with pytest.raises(ConnectError) as caught:
        call()
    return caught.value.code, caught.value.message


def run_id(name: str, project: str = "flytesnacks") -> identifier_pb2.RunIdentifier:
    return identifier_pb2.RunIdentifier(project=project, domain="development", name=name)


def test_every_flyteidl2_service_is_mounted_and_an_rpc_not_served_names_itself(server):
    assert len(service_applications()) >= 25
    triggers = trigger_service_connect.TriggerServiceClientSync(server.url)
    code, message = _code(lambda: triggers.list_triggers(trigger_service_pb2.ListTriggersRequest()))
    assert code == Code.UNIMPLEMENTED
    assert "flyteidl2.trigger.TriggerService/ListTriggers is not implemented" in message
    # A service of flyteidl2's that has no implementation at all, over plain HTTP as the SDK sends it.
    request = urllib.request.Request(f"{server.url}/flyteidl2.secret.SecretService/ListSecrets", data=b"{}",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 501 and b"SecretService/ListSecrets is not implemented" in caught.value.read()


def test_select_cluster_names_this_server(server):
    clusters = service_connect.ClusterServiceClientSync(server.url)
    assert clusters.select_cluster(payload_pb2.SelectClusterRequest()).cluster_endpoint == ""


def test_a_clients_mistakes_get_the_code_that_names_them(server):
    runs = run_service_connect.RunServiceClientSync(server.url)
    code, message = _code(lambda: runs.get_run_details(run_service_pb2.GetRunDetailsRequest(run_id=run_id("nope"))))
    assert code == Code.NOT_FOUND and "no action 'a0' in run nope" in message
    code, message = _code(lambda: runs.get_run_details(run_service_pb2.GetRunDetailsRequest()))
    assert code == Code.INVALID_ARGUMENT and "project, domain and name" in message
    spec = task_definition_pb2.TaskSpec()
    spec.task_template.type = "python"
    code, message = _code(lambda: runs.create_run(run_service_pb2.CreateRunRequest(
        run_id=run_id("r1", project="no-such-project"), task_spec=spec)))
    assert code == Code.NOT_FOUND and "project 'no-such-project' does not exist" in message
    code, message = _code(lambda: runs.create_run(run_service_pb2.CreateRunRequest(task_spec=spec)))
    assert code == Code.INVALID_ARGUMENT and "run_id" in message
    code, message = _code(lambda: runs.create_run(run_service_pb2.CreateRunRequest(
        run_id=run_id("r2"), task_id=task_definition_pb2.TaskIdentifier(name="t"))))
    assert code == Code.UNIMPLEMENTED and "deployed task" in message
    actions = actions_service_connect.ActionsServiceClientSync(server.url)
    child = actions_service_pb2.Action(
        action_id=identifier_pb2.ActionIdentifier(run=run_id("no-such-run"), name="c1"), parent_action_name="a0")
    child.task.spec.CopyFrom(spec)
    code, message = _code(lambda: actions.enqueue(actions_service_pb2.EnqueueRequest(action=child)))
    assert code == Code.NOT_FOUND and "has no action 'a0'" in message
    proxy = dataproxy_service_connect.DataProxyServiceClientSync(server.url)
    code, message = _code(lambda: proxy.upload_inputs(dataproxy_service_pb2.UploadInputsRequest()))
    assert code == Code.INVALID_ARGUMENT and "run_id or project_id" in message


def test_a_request_that_does_not_parse_is_invalid_argument(server):
    request = urllib.request.Request(f"{server.url}/flyteidl2.workflow.RunService/GetRunDetails",
                                     data=b"\xff\xff\xff", headers={"Content-Type": "application/proto"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 400, caught.value.read()


def test_a_run_whose_image_has_no_flyte_sdk_fails_saying_so_and_takes_no_more_children(server):
    """The server's own interpreter has no `flyte` SDK: the run's root action fails before anything starts, with
    what to configure; a child enqueued after it ended is refused."""
    runs = run_service_connect.RunServiceClientSync(server.url)
    name = "nosdk"
    spec = _a0_spec()
    created = runs.create_run(run_service_pb2.CreateRunRequest(run_id=run_id(name), task_spec=spec))
    assert created.run.action.id.name == "a0" and created.run.action.status.phase == 1  # QUEUED
    details = _failed(runs, name)
    error = details.action.error_info
    assert error.kind == 1 and "has no flyte SDK" in error.message and "example.com/flyte:py3.11" in error.message
    # The run's page, at the URL the SDK prints, shows the failure; a run that does not exist is a 404.
    with urllib.request.urlopen(f"{server.url}/v2/domain/development/project/flytesnacks/runs/{name}",
                                timeout=30) as page:
        text = page.read().decode()
    assert "hello.main" in text and "FAILED" in text and "has no flyte SDK" in text
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{server.url}/v2/domain/development/project/flytesnacks/runs/nope", timeout=30)
    assert caught.value.code == 404
    code, _ = _code(lambda: runs.create_run(run_service_pb2.CreateRunRequest(run_id=run_id(name), task_spec=spec)))
    assert code == Code.ALREADY_EXISTS
    # It never started a process: no log to tail.
    proxy = dataproxy_service_connect.DataProxyServiceClientSync(server.url)
    code, message = _code(lambda: list(proxy.tail_logs(dataproxy_service_pb2.TailLogsRequest(
        action_id=identifier_pb2.ActionIdentifier(run=run_id(name), name="a0")))))
    assert code == Code.NOT_FOUND and "has no log for attempt 1" in message
    attempt = identifier_pb2.ActionAttemptIdentifier(action_id=identifier_pb2.ActionIdentifier(run=run_id(name),
                                                                                              name="a0"), attempt=1)
    for artifact, expected in [(dataproxy_service_pb2.ARTIFACT_TYPE_REPORT, (Code.NOT_FOUND, "has no report")),
                               (dataproxy_service_pb2.ARTIFACT_TYPE_CODE_BUNDLE, (Code.NOT_FOUND, "no code bundle")),
                               (dataproxy_service_pb2.ARTIFACT_TYPE_UNSPECIFIED, (Code.INVALID_ARGUMENT,
                                                                                  "not ARTIFACT_TYPE_UNSPECIFIED"))]:
        code, message = _code(lambda: proxy.create_download_link(dataproxy_service_pb2.CreateDownloadLinkRequest(
            artifact_type=artifact, action_attempt_id=attempt)))  # noqa: B023 - called at once
        assert (code, expected[1] in message) == (expected[0], True), message
    uris = runs.get_action_data_u_r_is(run_service_pb2.GetActionDataURIsRequest(action_id=attempt.action_id))
    assert uris.inputs_uri.endswith("inputs.pb") and uris.outputs_uri == ""  # it failed: no outputs
    attempt.attempt = 5
    code, message = _code(lambda: proxy.create_download_link(dataproxy_service_pb2.CreateDownloadLinkRequest(
        artifact_type=dataproxy_service_pb2.ARTIFACT_TYPE_REPORT, action_attempt_id=attempt)))
    assert code == Code.INVALID_ARGUMENT and "not 5" in message
    actions = actions_service_connect.ActionsServiceClientSync(server.url)
    child = actions_service_pb2.Action(action_id=identifier_pb2.ActionIdentifier(run=run_id(name), name="c1"),
                                       parent_action_name="a0")
    child.task.spec.CopyFrom(spec)
    code, message = _code(lambda: actions.enqueue(actions_service_pb2.EnqueueRequest(action=child)))
    assert code == Code.FAILED_PRECONDITION and "has ended" in message


def test_lists_page_by_token_filter_and_sort(server):
    runs = run_service_connect.RunServiceClientSync(server.url)
    project = identifier_pb2.ProjectIdentifier(name="flytesnacks", domain="development")
    for name in ("listed1", "listed2"):
        runs.create_run(run_service_pb2.CreateRunRequest(run_id=run_id(name), task_spec=_a0_spec()))
        _failed(runs, name)
    seen, token = [], ""
    while True:  # newest first, one a page
        page = runs.list_runs(run_service_pb2.ListRunsRequest(project_id=project,
                                                              request=list_pb2.ListRequest(limit=1, token=token)))
        seen += [run.action.id.run.name for run in page.runs]
        token = page.token
        if not token:
            break
    assert seen.index("listed2") < seen.index("listed1") and len(seen) == len(set(seen))
    actions = runs.list_actions(run_service_pb2.ListActionsRequest(run_id=run_id("listed1"))).actions
    assert [a.id.name for a in actions] == ["a0"] and actions[0].status.phase == 6

    def names(*filters: list_pb2.Filter, sort: list_pb2.Sort | None = None) -> list[str]:
        request = list_pb2.ListRequest(filters=filters, sort_by=sort, limit=1000)
        return [r.action.id.run.name for r in runs.list_runs(run_service_pb2.ListRunsRequest(
            project_id=project, request=request)).runs if r.action.id.run.name.startswith("listed")]

    Function = list_pb2.Filter.Function
    failed = list_pb2.Filter(function=Function.EQUAL, field="phase", values=["6"])  # as the SDK sends a phase
    assert names(failed) == ["listed2", "listed1"]
    assert names(list_pb2.Filter(function=Function.VALUE_IN, field="phase", values=["SUCCEEDED", "QUEUED"])) == []
    assert names(failed, list_pb2.Filter(function=Function.EQUAL, field="task_name", values=["hello.main"]),
                 sort=list_pb2.Sort(key="created_at", direction=list_pb2.Sort.ASCENDING)) == ["listed1", "listed2"]
    assert names(list_pb2.Filter(function=Function.EQUAL, field="name", values=["listed2"])) == ["listed2"]
    future = list_pb2.Filter(function=Function.GREATER_THAN_OR_EQUAL, field="created_at",
                             values=["2999-01-01T00:00:00+00:00"])
    assert names(future) == []

    def refused(*filters: list_pb2.Filter) -> tuple[Code, str]:
        return _code(lambda: runs.list_runs(run_service_pb2.ListRunsRequest(
            project_id=project, request=list_pb2.ListRequest(filters=filters))))

    code, message = refused(list_pb2.Filter(function=Function.EQUAL, field="labels.team", values=["x"]))
    assert code == Code.UNIMPLEMENTED and "labels" in message
    code, message = refused(list_pb2.Filter(function=Function.ENDS_WITH, field="name", values=["2"]))
    assert code == Code.UNIMPLEMENTED and "ENDS_WITH" in message
    code, message = refused(list_pb2.Filter(function=Function.EQUAL, field="colour", values=["red"]))
    assert code == Code.INVALID_ARGUMENT and "cannot filter on 'colour'" in message
    code, message = refused(list_pb2.Filter(function=Function.EQUAL, field="phase", values=["SLEEPING"]))
    assert code == Code.INVALID_ARGUMENT and "unknown phase 'SLEEPING'" in message
    code, message = _code(lambda: runs.list_runs(run_service_pb2.ListRunsRequest(
        project_id=project, request=list_pb2.ListRequest(token="x"))))
    assert code == Code.INVALID_ARGUMENT and "token 'x'" in message
    code, _ = _code(lambda: runs.list_actions(run_service_pb2.ListActionsRequest(run_id=run_id("nope"))))
    assert code == Code.NOT_FOUND


def test_projects_are_flyte_1s_and_an_anonymous_caller_is_answered_as_flyteadmin_does(server):
    projects = project_service_connect.ProjectServiceClientSync(server.url)
    projects.create_project(project_service_pb2.CreateProjectRequest(project=project_service_pb2.Project(
        id="flyte2-made", name="Made by Flyte 2", description="through ProjectService")))
    found = projects.get_project(project_service_pb2.GetProjectRequest(id="flyte2-made")).project
    assert (found.name, found.description) == ("Made by Flyte 2", "through ProjectService")
    assert [d.id for d in found.domains] == ["development", "staging", "production"]
    # The same project through Flyte 1's API, and Flyte 1's projects through Flyte 2's.
    with grpc.insecure_channel(server.endpoint) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        assert admin.GetProject(ProjectGetRequest(id="flyte2-made")).name == "Made by Flyte 2"
    listed = projects.list_projects(project_service_pb2.ListProjectsRequest(limit=100)).projects.projects
    assert {"flytesnacks", "flyte2-made"} <= {p.id for p in listed}
    found.state = project_service_pb2.PROJECT_STATE_ARCHIVED
    projects.update_project(project_service_pb2.UpdateProjectRequest(project=found))
    listed = projects.list_projects(project_service_pb2.ListProjectsRequest(limit=100)).projects.projects
    assert "flyte2-made" not in {p.id for p in listed}  # archived projects are listed only when asked
    code, message = _code(lambda: projects.get_project(project_service_pb2.GetProjectRequest(id="nope")))
    assert code == Code.NOT_FOUND and "nope" in message
    code, message = _code(lambda: projects.create_project(project_service_pb2.CreateProjectRequest(
        project=project_service_pb2.Project(id="Bad_Id"))))
    assert code == Code.INVALID_ARGUMENT and "invalid project id" in message
    code, _ = _code(lambda: projects.create_project(project_service_pb2.CreateProjectRequest(
        project=project_service_pb2.Project(id="flyte2-made"))))
    assert code == Code.ALREADY_EXISTS
    identity = identity_connect.IdentityServiceClientSync(server.url)
    assert identity.user_info(identity_pb2.UserInfoRequest()) == identity_pb2.UserInfoResponse()


def test_watches_send_what_there_is_then_what_changes(server):
    project_service_connect.ProjectServiceClientSync(server.url).create_project(
        project_service_pb2.CreateProjectRequest(project=project_service_pb2.Project(id="watched")))
    runs = run_service_connect.RunServiceClientSync(server.url, timeout_ms=120_000)
    project = identifier_pb2.ProjectIdentifier(name="watched", domain="development")
    runs.create_run(run_service_pb2.CreateRunRequest(run_id=run_id("w1", "watched"), task_spec=_a0_spec()))
    _failed(runs, "w1", "watched")
    stream = runs.watch_runs(run_service_pb2.WatchRunsRequest(project_id=project))
    first = next(stream)
    assert [(r.action.id.run.name, r.action.status.phase) for r in first.runs] == [("w1", 6)]
    runs.create_run(run_service_pb2.CreateRunRequest(run_id=run_id("w2", "watched"), task_spec=_a0_spec()))
    phases = []
    while 6 not in phases:  # the new run as it changes, until it failed
        phases += [r.action.status.phase for r in next(stream).runs if r.action.id.run.name == "w2"]
    stream.close()
    assert phases[-1] == 6, phases
    actions = runs.watch_actions(run_service_pb2.WatchActionsRequest(run_id=run_id("w1", "watched")))
    snapshot = next(actions).enriched_actions
    actions.close()
    assert [(a.action.id.name, a.action.status.phase, a.meets_filter) for a in snapshot] == [("a0", 6, True)]
    end = timestamp_pb2.Timestamp()
    end.FromSeconds(int(time.time()) + 3600)
    groups = list(runs.watch_groups(run_service_pb2.WatchGroupsRequest(project_id=project, end_date=end)))
    assert len(groups) == 1 and groups[0].sentinel  # a period that ended is answered once
    [group] = groups[0].task_groups
    assert (group.task_name, group.short_name, group.total_runs, group.average_failure_rate) == (
        "hello.main", "main", 2, 1.0)
    assert [(c.phase, c.count) for c in group.phase_counts] == [(6, 2)]
    assert [s.run_name for s in group.recent_statuses] == ["w2", "w1"] and group.error_counts.user_error == 2
    code, message = _code(lambda: next(runs.watch_actions(run_service_pb2.WatchActionsRequest(
        run_id=run_id("w1", "watched"), filter=[list_pb2.Filter(field="phase", values=["FAILED"])]))))
    assert code == Code.UNIMPLEMENTED and "does not filter yet (asked: phase)" in message
    code, _ = _code(lambda: next(runs.watch_actions(run_service_pb2.WatchActionsRequest(
        run_id=run_id("nope", "watched")))))
    assert code == Code.NOT_FOUND
