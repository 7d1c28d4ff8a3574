"""The executions list: search, its filters (who launched an execution among them), sorting and archived
executions."""

from __future__ import annotations

import re
from datetime import timedelta

import requests
from flyteidl.admin import execution_pb2 as A
from flyteidl.core import execution_pb2 as E
from flyteidl.core import identifier_pb2 as I

from flytelite.idl.times import to_duration, to_timestamp
from flytelite.store.models import Execution, ExecutionTag
from tests.console.test_pages import T0

LIST = "/console/projects/flytesnacks/executions"


def add(ctx, name: str, workflow: str, launch_plan: str, seconds: float, minutes_later: int = 0,
        tags: dict[str, str] | None = None, archived: bool = False, launched_by: str = "") -> None:
    created = T0 + timedelta(minutes=minutes_later)
    closure = A.ExecutionClosure(phase=E.WorkflowExecution.SUCCEEDED, created_at=to_timestamp(created),
                                 started_at=to_timestamp(created), duration=to_duration(timedelta(seconds=seconds)))
    spec = A.ExecutionSpec(launch_plan=I.Identifier(resource_type=I.LAUNCH_PLAN, project="flytesnacks",
                                                    domain="development", name=launch_plan, version="v1"))
    with ctx.db.session() as s:
        s.add(Execution(project="flytesnacks", domain="development", name=name, launch_plan_name=launch_plan,
                        launch_plan_version="v1", workflow_name=workflow, workflow_version="v1",
                        phase=E.WorkflowExecution.SUCCEEDED, state=1 if archived else 0, launched_by=launched_by,
                        spec_pb=spec.SerializeToString(), closure_pb=closure.SerializeToString(), inputs_uri="",
                        created_at=created, updated_at=created, started_at=created, duration=seconds))
        for key, value in (tags or {}).items():
            s.add(ExecutionTag(project="flytesnacks", domain="development", execution_name=name, key=key,
                               value=value))


def listed(console, **params) -> list[str]:
    resp = requests.get(console.url + LIST, params={"domain": "development", **params})
    assert resp.status_code == 200, resp.text[:300]
    assert "notice bad" not in resp.text, re.findall(r"notice bad'>([^<]*)", resp.text)
    return re.findall(r"<tr data-execution-row='([^']+)'", resp.text)


def problem(console, **params) -> str:
    resp = requests.get(console.url + LIST, params={"domain": "development", **params})
    assert resp.status_code == 200
    return " ".join(re.findall(r"notice bad'>([^<]*)", resp.text))


def populate(ctx) -> None:
    add(ctx, "alpha1", "etl.daily", "etl.daily", 30, 1, launched_by="ada")
    add(ctx, "beta2", "ml.train", "ml.train_nightly", 3600, 2, tags={"team": "vision"}, launched_by="lara")
    add(ctx, "gamma3", "ml.train", "ml.train", 600, 3, tags={"ticket-42": ""})
    add(ctx, "old4", "etl.daily", "etl.daily", 10, 0, archived=True)


def test_search_looks_in_names_workflows_launch_plans_tags_and_labels(console):
    populate(console.ctx)
    assert listed(console) == ["gamma3", "beta2", "alpha1"]  # newest first; archived left out
    assert listed(console, q="ml.") == ["gamma3", "beta2"]
    assert listed(console, q="nightly") == ["beta2"]
    assert listed(console, q="vision") == ["beta2"]  # a label's value
    assert listed(console, q="ticket") == ["gamma3"]  # a tag
    assert listed(console, q="alpha") == ["alpha1"]
    assert listed(console, q="ml.", phase="FAILED") == []
    assert "without parentheses, commas" in problem(console, q="a,b")


def test_filters_by_launch_plan_duration_and_archived(console):
    populate(console.ctx)
    assert listed(console, launch_plan="ml.train") == ["gamma3"]
    assert listed(console, min_duration="10m") == ["gamma3", "beta2"]
    assert listed(console, min_duration="1h") == ["beta2"]
    assert listed(console, min_duration="31") == ["gamma3", "beta2"]
    assert "shortest duration must be a number of seconds" in problem(console, min_duration="soon")
    assert listed(console, archived="1") == ["old4"]
    assert listed(console, launched_by="lara") == ["beta2"]
    # Without authentication nobody is signed in: there is no "only mine" to offer.
    assert "only mine needs a signed-in user" in problem(console, mine="1")
    assert "name='mine'" not in requests.get(console.url + LIST).text


def test_columns_sort_both_ways(console):
    populate(console.ctx)
    assert listed(console, sort="duration", dir="asc") == ["alpha1", "gamma3", "beta2"]
    assert listed(console, sort="duration") == ["beta2", "gamma3", "alpha1"]
    assert listed(console, sort="name", dir="asc") == ["alpha1", "beta2", "gamma3"]
    assert listed(console, sort="duration", dir="asc", q="ml.") == ["gamma3", "beta2"]
    body = requests.get(console.url + LIST, params={"domain": "development", "sort": "duration", "dir": "asc"}).text
    # The sorted column's heading flips the order; another column's sorts by it, newest or longest first.
    assert "data-sort='duration' href='/console/projects/flytesnacks/executions?domain=development&amp;" \
           "sort=duration&amp;dir=desc'>Duration ▲</a>" in body
    assert "data-sort='created_at' href='/console/projects/flytesnacks/executions?domain=development&amp;" \
           "sort=created_at&amp;dir=desc'>Created</a>" in body
    assert "the list sorts by created_at, duration, name" in problem(console, sort="colour")


def test_archiving_takes_an_execution_out_of_the_list_and_back(console):
    populate(console.ctx)
    page = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/alpha1").text
    assert "data-action='archive'>Archive</button>" in page
    url = f"{console.url}/api/v1/executions/flytesnacks/development/alpha1"
    ident = {"project": "flytesnacks", "domain": "development", "name": "alpha1"}
    assert requests.put(url, json={"id": ident, "state": "EXECUTION_ARCHIVED"}).status_code == 200
    assert listed(console) == ["gamma3", "beta2"] and listed(console, archived="1") == ["alpha1", "old4"]
    page = requests.get(f"{console.url}/console/projects/flytesnacks/domains/development/executions/alpha1").text
    assert "<span class='tag archived'>archived</span>" in page and "data-action='unarchive'" in page
    assert requests.put(url, json={"id": ident, "state": "EXECUTION_ACTIVE"}).status_code == 200
    assert listed(console) == ["gamma3", "beta2", "alpha1"]
