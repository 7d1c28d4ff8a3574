"""What flytekit's own remote integration suite and Flyte's documentation examples expect of a backend,
run with real `pyflyte run --remote` against a real server (issue 12)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flytekit.configuration import Config as FlyteConfig
from flytekit.core.data_persistence import FileAccessProvider
from flytekit.models.core.execution import NodeExecutionPhase, WorkflowExecutionPhase
from flytekit.remote import FlyteRemote

from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
SUCCEEDED, SKIPPED = NodeExecutionPhase.SUCCEEDED, NodeExecutionPhase.SKIPPED


def finished(remote, name: str):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.3))
    return remote.sync_execution(execution, sync_nodes=True)


def arm(branch):
    (only,) = branch.subworkflow_node_executions.values()
    return only


def test_branch_arm_waits_for_the_node_it_reads(server, remote, tmp_path):
    """The condition reads a workflow input, the arm reads n0's output: the arm waits for n0."""
    folder = copy_workflows(tmp_path / "wf", "branch_upstream.py")
    ex = finished(remote, run_remote(server, folder, "branch_upstream.py", "branch_upstream_wf", "--radius", "2.0"))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    area, circumference = ex.node_executions["n1"], ex.node_executions["n2"]
    # get_area is false: the Echo arm passes n0's output through without a process.
    echo = arm(area)
    assert echo.closure.phase == SUCCEEDED and echo.outputs["o0"] == 2.0
    assert echo.task_executions[0].closure.phase == 3
    assert arm(circumference).outputs["o0"] == 12.0


def test_nested_branch_arm_waits_for_an_outer_node(server, remote, tmp_path):
    folder = copy_workflows(tmp_path / "wf", "branch_upstream.py")
    ex = finished(remote, run_remote(server, folder, "branch_upstream.py", "nested_upstream_wf", "--radius", "2.0"))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 12.0


def test_control_plane_version_over_grpc_and_rest(server):
    import requests
    from flytekit.clients.friendly import SynchronousFlyteClient
    from flytekit.configuration import PlatformConfig

    client = SynchronousFlyteClient(PlatformConfig.for_endpoint(server.endpoint, True))
    version = client.get_control_plane_version()
    # flytekit's integration suite: "unknown" or a v-prefixed version, as Flyte's releases answer.
    assert version.startswith("v") and version[1].isdigit(), version
    rest = requests.get(f"{server.url}/api/v1/version", timeout=30).json()["controlPlaneVersion"]
    assert rest["Version"] == version and rest["Build"] == "flytelite" and rest["BuildTime"]


def test_uploaded_folder_default_and_blob_outputs_are_remote_to_flytekit(server, remote, tmp_path):
    """A FlyteDirectory default `pyflyte run --remote` uploads is handed to the task as remote data
    (flytekit checked plain paths with os.path.isdir and failed); outputs come back as URIs that
    FlyteRemote on this machine downloads."""
    folder = copy_workflows(tmp_path / "wf", "blob_types.py")
    (folder / "blob_data").mkdir()
    (folder / "blob_data" / "a.txt").write_text("alpha\n")
    (folder / "blob_data" / "b.txt").write_text("beta\n")
    ex = finished(remote, run_remote(server, folder, "blob_types.py", "blob_types_wf"))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == "alpha|a.txt,b.txt|ALPHA\n"
    read = ex.node_executions["n0"]
    bundle_literal = read.outputs.literals["o0"]
    uris = _blob_uris(bundle_literal)
    assert uris and all(FileAccessProvider.is_remote(u) for u in uris), uris
    # The workflow's own input: the uploaded defaults are remote URIs too.
    assert all(FileAccessProvider.is_remote(u) for u in _blob_uris(ex.inputs.literals["b"])), ex.inputs


def _blob_uris(literal) -> list[str]:
    """Every blob URI in a literal (dataclasses travel as msgpack or JSON: read the uri fields)."""
    import json

    import msgpack
    from google.protobuf.json_format import MessageToDict

    scalar = literal.scalar
    if scalar.binary.value:
        data = msgpack.unpackb(scalar.binary.value)
    elif scalar.blob.uri:
        return [scalar.blob.uri]
    else:
        data = MessageToDict(scalar.generic)
    found = []

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                if k in ("path", "uri") and isinstance(v, str) and v:
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith("{"):
            walk(json.loads(value))

    walk(data)
    return found


def test_eager_workflow_registers_the_same_entities_from_inside_a_task(server, remote, tmp_path):
    """Each eager task registers its static subworkflow and that subworkflow's tasks itself; the second
    registers the shared task es_add_one again (from another attempt's folder), which is accepted only
    if what a task serializes does not depend on the attempt (no per-attempt --dest-dir)."""
    folder = copy_workflows(tmp_path / "wf", "eager_static.py")
    for entity, expected in (("eager_a", 8), ("eager_b", 5)):
        ex = finished(remote, run_remote(server, folder, "eager_static.py", entity, "--x", "3"))
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == expected


@pytest.fixture(scope="module")
def cold_server(tmp_path_factory):
    """A server that starts every attempt as a fresh `pyflyte-fast-execute` process (no warm workers)."""
    folder = tmp_path_factory.mktemp("cold-server")
    srv = make_server(folder, config="engine:\n  warm_workers: false\n")
    srv.start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_image_spec_task_sees_itself_inside_its_image(mode, server, cold_server, tmp_path):
    srv = server if mode == "warm" else cold_server
    folder = copy_workflows(tmp_path / "wf", "image_spec_flows.py")
    rem = FlyteRemote(FlyteConfig.auto(str(srv.config_path)), default_project="flytesnacks",
                      default_domain="development")
    ex = finished(rem, run_remote(srv, folder, "image_spec_flows.py", "image_spec_wf"))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == '{"inside": true, "other": false}'
