"""Directories of any shape on the local blob store behave as on an object store, warm and cold: a folder of
one file, of nested folders, of names with spaces, uploaded by `pyflyte run --remote` as an input, made by a
task as an output, read by the next task and downloaded by FlyteRemote.

flytekit's upload of a local folder sends each file under its own name in one upload folder (so a nested
folder arrives flat, as on S3), and names the file itself as the directory when there is one only."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", params=["warm", "cold"])
def server(request, tmp_path_factory):
    srv = make_server(tmp_path_factory.mktemp(f"dirs-{request.param}"),
                      f"engine:\n  warm_workers: {'true' if request.param == 'warm' else 'false'}\n")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def code(tmp_path_factory):
    return copy_workflows(tmp_path_factory.mktemp("dirs-wf"), "directories.py")


def _succeeded(server, name: str):
    remote = remote_for(server)
    ex = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=180),
                     poll_interval=timedelta(seconds=0.5))
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    return ex


def _folder(root, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.mark.parametrize("files, listed", [
    ({"x.txt": "hi"}, "x.txt=hi"),
    ({"a file.txt": "s"}, "a file.txt=s"),
    ({"a/b/deep.txt": "n", "top.txt": "t"}, "deep.txt=n,top.txt=t"),  # flytekit uploads the files flat
])
def test_a_directory_input_of_any_shape(server, code, tmp_path, files, listed):
    name = run_remote(server, code, "directories.py", "list_wf", "--d", _folder(tmp_path / "in put", files))
    assert _succeeded(server, name).outputs["o0"] == listed


@pytest.mark.parametrize("shape, listed", [
    ("one", "x.txt=hi"), ("nested", "a/b/deep.txt=n,top.txt=t"), ("spaces", "sub dir/a file.txt=s"),
])
def test_a_directory_output_of_any_shape_reaches_the_next_task_and_the_client(server, code, tmp_path, shape,
                                                                               listed):
    name = run_remote(server, code, "directories.py", "made_wf", "--shape", shape)
    ex = _succeeded(server, name)
    assert ex.outputs["o1"] == listed
    local = ex.outputs["o0"].download()
    found = sorted(f"{os.path.relpath(os.path.join(r, n), local)}" for r, _, ns in os.walk(local) for n in ns)
    assert ",".join(found) == ",".join(entry.split("=")[0] for entry in listed.split(","))
