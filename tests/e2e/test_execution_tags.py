"""Execution tags and labels set at launch (`pyflyte run --tags/--labels`, a launch plan's labels) are listed
with the execution, filter ListExecutions with FlyteAdmin's execution_tag filters, and filter and show in the
console's executions list."""

from __future__ import annotations

import urllib.parse

import pytest
import requests
from flytekit.models import filters as flyte_filters

from tests.e2e.flyte_cli import EXECUTION_URL, copy_workflows, pyflyte, remote_for

pytestmark = pytest.mark.e2e

P, D = "flytesnacks", "development"


@pytest.fixture(scope="module")
def launched(server, tmp_path_factory):
    code = copy_workflows(tmp_path_factory.mktemp("tags"), "attributed.py")
    return _run(server, code, "--tags", "nightly", "--labels", "team=blue"), _run(server, code, "--labels", "team=red")


def _run(server, code, *options: str) -> str:
    proc = pyflyte(server, "run", "--remote", "--project", P, "--domain", D, *options, "attributed.py", "env_wf",
                   cwd=code)
    match = EXECUTION_URL.search(proc.stdout + proc.stderr)
    assert match, proc.stdout + proc.stderr
    return match.group(3)


def _names(server, *filters) -> set[str]:
    executions, _ = remote_for(server).client.list_executions_paginated(P, D, limit=200, filters=list(filters))
    return {e.id.name for e in executions}


def test_tags_and_labels_are_listed_and_filter_executions(server, launched):
    tagged, plain = launched
    execution = remote_for(server).fetch_execution(name=tagged)
    assert list(execution.spec.tags) == ["nightly"] and execution.spec.labels.values == {"team": "blue"}
    by_tag = _names(server, flyte_filters.Equal("execution_tag.key", "nightly"))
    assert tagged in by_tag and plain not in by_tag
    red = _names(server, flyte_filters.Equal("execution_tag.key", "team"), flyte_filters.Equal("execution_tag.value",
                                                                                                "red"))
    assert plain in red and tagged not in red


def test_the_console_list_filters_by_tag_or_label_and_shows_them(server, launched):
    tagged, plain = launched
    base = f"{server.url}/console/projects/{P}/executions?domain={D}"
    page = requests.get(f"{base}&tag={urllib.parse.quote('team=blue')}", timeout=60).text
    assert f"data-execution-row='{tagged}'" in page and f"data-execution-row='{plain}'" not in page
    assert "<span class='tag'>nightly</span>" in page and "<span class='tag'>team=blue</span>" in page
    page = requests.get(f"{base}&tag=nightly", timeout=60).text
    assert f"data-execution-row='{tagged}'" in page and f"data-execution-row='{plain}'" not in page
