"""The execution page names nodes as flyteconsole does and lists a dynamic node's children in numeric order,
for a real run of every node kind."""

from __future__ import annotations

import re
import urllib.request
from datetime import timedelta

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote

pytestmark = pytest.mark.e2e


def finished_page(server, tmp_path, *args: str) -> str:
    code = copy_workflows(tmp_path / "wf", "all_kinds.py")
    name = run_remote(server, code, "all_kinds.py", *args)
    remote = remote_for(server)
    ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                     poll_interval=timedelta(seconds=0.5))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    with urllib.request.urlopen(f"{server.url}/console/projects/flytesnacks/domains/development/executions/{name}") as r:
        return r.read().decode()


def labels(page: str) -> list[str]:
    """Each node row's label as text, in the list's order."""
    rows = re.findall(r"<tr data-node-row='[^']*' data-phase='[^']*'[^>]*><td[^>]*>(.*?)</td>", page)
    labels = [re.sub(r"<button class='secondary toggle'.*?</button>", "", row) for row in rows]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", label)).strip() for label in labels]


def test_nodes_are_named_by_what_they_run(server, tmp_path):
    page = finished_page(server, tmp_path, "all_kinds_wf")
    found = labels(page)
    top = sorted(label for label in found if re.search(r" n\d( ·|$)", label))
    assert top == ["all_kinds_child n4 · launch plan", "branch n2", "fan n3", "inc n0", "inc n6 · map",
                   "sleep n5 · gate", "sub n1 · subworkflow"], found
    # The subworkflow's own nodes and the branch's arm are named too.
    assert "inc n1-0-n0" in found and "inc n1-0-n1" in found
    assert "inc n2-0-n2-n0" in found, found
    # Each name links the page of what the node runs: the task, the launch plan.
    task = re.search(r"<a href='(/console/projects/flytesnacks/tasks/all_kinds\.inc\?domain=development&amp;"
                     r"version=[^']+)'>inc</a>", page)
    assert task is not None and "<a href='/console/projects/flytesnacks/launchPlans/all_kinds_child?" in page
    with urllib.request.urlopen(server.url + task[1].replace("&amp;", "&")) as r:
        assert "all_kinds.inc" in r.read().decode()
    # The subworkflow, the dynamic node and the branch each have a graph of what they ran (shown from their
    # panels): the branch's arms side by side, the one taken coloured by its phase.
    graphs = dict(re.findall(r"<div class='dag subdag' data-graph-of='([^']+)' hidden>(.*?)</svg>", page, re.S))
    assert sorted(graphs) == ["n1", "n2", "n3"], sorted(graphs)
    arms = dict(re.findall(r"data-node='(n2-n\d)' data-phase='([A-Z_]+)'", graphs["n2"]))
    assert sorted(arms.values()) == ["NOT_STARTED", "SUCCEEDED"], arms
    assert re.findall(r"data-node='(dn\d)' data-phase='SUCCEEDED'", graphs["n3"]) == ["dn0", "dn1"]


def test_a_dynamic_nodes_children_are_in_numeric_order(server, tmp_path):
    found = labels(finished_page(server, tmp_path, "fan", "--n", "12"))
    children = [label for label in found if "-dn" in label]
    ids = [int(label.rsplit("-dn", 1)[1]) for label in children]
    assert ids == list(range(12)), children
    assert all(label.startswith("inc ") for label in children), children

