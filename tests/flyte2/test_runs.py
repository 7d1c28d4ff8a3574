"""`flyte.run` against flytelite: each task's outputs equal those of the same task in the SDK's local mode."""

from __future__ import annotations

import io
import tarfile
import urllib.request
from pathlib import Path

import pytest
from flyteidl2.common import identifier_pb2
from flyteidl2.dataproxy import dataproxy_service_connect, dataproxy_service_pb2
from flyteidl2.workflow import run_service_connect, run_service_pb2

from tests.flyte2.conftest import FAILED, NO_SDK, SUCCEEDED, drive

pytestmark = NO_SDK

CASES = [
    ("gather_squares", {"n": 4}),          # children fanned out with asyncio.gather, in a group
    ("map_shift", {"n": 5}),               # flyte.map over a sync task
    ("with_trace", {"x": 3}),              # a trace beside a child task
    ("catches_child_failure", {"x": 1}),   # a child's user error reaches its parent as RuntimeUserError
    ("nothing_out", {"x": 1}),             # no outputs
    ("move_point", {"p": {"x": 1, "y": 1.5, "label": "a"}, "dx": 2}),  # a dataclass in and out
    ("file_round_trip", {"text": "hello"}),  # a File written by one child, opened by another
    ("calls_reused", {"n": 3}),            # children of a reusable environment (ReusePolicy: task type "actor")
]


@pytest.mark.parametrize(("task", "inputs"), CASES, ids=[c[0] for c in CASES])
def test_remote_run_equals_the_local_run(server, task, inputs):
    local = drive(server, task, inputs, mode="local")
    remote = drive(server, task, inputs)
    assert remote["phase"] == SUCCEEDED, remote
    assert remote["outputs"] == local["outputs"]


def test_a_failed_run_carries_its_users_error(server):
    remote = drive(server, "fails_uncaught", {"x": 7})
    assert remote["phase"] == FAILED
    assert remote["error"]["code"] == "ValueError" and "no good: 7" in remote["error"]["message"]
    assert remote["error"]["kind"] == 1  # USER


def test_a_child_is_retried_within_its_tasks_retries(server):
    remote = drive(server, "retried_child", {"x": 5})
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["6"]  # x + the attempt that succeeded (1)


def test_the_run_page_shows_the_action_tree(server):
    remote = drive(server, "gather_squares", {"n": 3})
    url = f"{server.url}/v2/domain/development/project/flytesnacks/runs/{remote['name']}"
    with urllib.request.urlopen(url, timeout=30) as page:
        text = page.read().decode()
    assert text.count(">square</a>") == 3 and ">gather_squares</a>" in text
    assert text.count(" · group squares<") == 3  # the children's flyte.group
    assert text.count(">SUCCEEDED<") == 5 and text.count(">Task log (local process)<") == 4  # the run's, each action's
    runs = run_service_connect.RunServiceClientSync(server.url, timeout_ms=120_000)
    stream = runs.watch_actions(run_service_pb2.WatchActionsRequest(run_id=identifier_pb2.RunIdentifier(
        project="flytesnacks", domain="development", name=remote["name"])))
    snapshot = {a.action.id.name: a for a in next(stream).enriched_actions}
    stream.close()
    assert len(snapshot) == 4 and dict(snapshot["a0"].children_phase_counts) == {SUCCEEDED: 3}


def test_a_tasks_report_and_code_bundle_are_read_through_signed_links(server):
    remote = drive(server, "reports", {"title": "quarterly"}, mode="report")
    assert remote["phase"] == SUCCEEDED and "<h2>quarterly</h2>" in remote["report"], remote
    proxy = dataproxy_service_connect.DataProxyServiceClientSync(server.url)
    link = proxy.create_download_link(dataproxy_service_pb2.CreateDownloadLinkRequest(
        artifact_type=dataproxy_service_pb2.ARTIFACT_TYPE_CODE_BUNDLE,
        action_attempt_id=identifier_pb2.ActionAttemptIdentifier(action_id=identifier_pb2.ActionIdentifier(
            run=identifier_pb2.RunIdentifier(project="flytesnacks", domain="development", name=remote["name"]),
            name="a0"), attempt=1)))
    with urllib.request.urlopen(link.pre_signed_urls.signed_url[0], timeout=30) as bundle:
        assert "basics.py" in tarfile.open(fileobj=io.BytesIO(bundle.read()), mode="r:gz").getnames()


def test_an_actions_data_uris_name_its_inputs_and_outputs(server):
    remote = drive(server, "square", {"x": 3})
    runs = run_service_connect.RunServiceClientSync(server.url)
    uris = runs.get_action_data_u_r_is(run_service_pb2.GetActionDataURIsRequest(action_id=identifier_pb2.ActionIdentifier(
        run=identifier_pb2.RunIdentifier(project="flytesnacks", domain="development", name=remote["name"]),
        name="a0")))
    assert uris.inputs_uri.startswith("local://") and uris.outputs_uri.startswith("local://"), uris
    assert Path(uris.inputs_uri.removeprefix("local://")).is_file()
    assert (Path(uris.outputs_uri.removeprefix("local://")) / "outputs.pb").is_file()
