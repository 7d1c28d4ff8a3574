"""A server whose blob store is S3 (a real moto server): `pyflyte run --remote` uploads to the bucket,
tasks read and write the bucket themselves, and FlyteRemote gets outputs and decks from it."""

from __future__ import annotations

import hashlib
import os
import urllib.request
from datetime import timedelta
from urllib.parse import urlsplit

import pandas as pd
import pytest
import requests
from flyteidl.service import dataproxy_pb2
from flytekit import FlyteContextManager
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.storage.s3 import split_uri
from tests.e2e.flyte_cli import copy_workflows, run_remote

pytestmark = pytest.mark.e2e
WAIT = timedelta(seconds=180)
ROOT = "flytelite"  # the prefix of the s3_server fixture's storage_root in the bucket


def wait(remote, name: str):
    execution = remote.wait(remote.fetch_execution(name=name), timeout=WAIT, poll_interval=timedelta(seconds=0.5))
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    return execution


def keys(s3, prefix: str) -> list[str]:
    found, token = [], None
    while True:
        page = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=prefix, **({"ContinuationToken": token} if token else {}))
        found += [o["Key"] for o in page.get("Contents", [])]
        token = page.get("NextContinuationToken")
        if not token:
            return found


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return copy_workflows(tmp_path_factory.mktemp("s3wf"), "s3_flows.py")


def test_hello_keeps_its_data_in_the_bucket(s3, s3_server, s3_remote, folder):
    name = run_remote(s3_server, folder, "s3_flows.py", "s3_hello_wf", "--name", "bucket")
    execution = wait(s3_remote, name)
    assert execution.outputs["o0"] == "hello bucket"
    # Flyte's layout under the bucket: metadata/propeller/<project>-<domain>-<name>/<node>/data/...
    data = keys(s3, f"{ROOT}/metadata/propeller/flytesnacks-development-{name}/")
    assert f"{ROOT}/metadata/propeller/flytesnacks-development-{name}/n0/data/0/outputs.pb" in data
    assert f"{ROOT}/metadata/propeller/flytesnacks-development-{name}/n0/data/inputs.pb" in data
    # The code tarball pyflyte uploaded went to the bucket too.
    assert any(k.endswith(".tar.gz") for k in keys(s3, f"{ROOT}/uploads/flytesnacks/development/"))
    # Nothing of the execution is on the server's disk.
    blobs = s3_server.home / "blobs"
    assert not blobs.exists() or not any(name in str(p) for p in blobs.rglob("*"))


def test_upload_location_is_the_bucket_not_flytelite(s3, s3_server, s3_remote):
    data = b"bytes for the bucket"
    md5 = hashlib.md5(data).digest()
    location = s3_remote.client.get_upload_signed_url(project="flytesnacks", domain="development", content_md5=md5,
                                                      filename="direct.txt")
    url = urlsplit(location.signed_url)
    assert url.netloc == urlsplit(s3.endpoint).netloc != f"localhost:{s3_server.port}"
    assert location.native_url.startswith(f"s3://{s3.bucket}/{ROOT}/uploads/flytesnacks/development/")
    rsp = requests.put(location.signed_url, data=data, headers=dict(location.headers), timeout=10)
    assert rsp.status_code == 200, rsp.text
    bucket, key = split_uri(location.native_url)
    assert s3.client().get_object(Bucket=bucket, Key=key)["Body"].read() == data
    # And a download location for it is presigned by the bucket as well.
    link = s3_remote.client.get_download_signed_url(location.native_url)
    assert urlsplit(link.signed_url).netloc == urlsplit(s3.endpoint).netloc
    with urllib.request.urlopen(link.signed_url) as r:
        assert r.read() == data


def test_files_folders_and_dataframes_round_trip(s3, s3_server, s3_remote, folder, tmp_path):
    given = tmp_path / "given.txt"
    given.write_text("from the laptop\n")
    name = run_remote(s3_server, folder, "s3_flows.py", "s3_blobs_wf", "--text", "red green blue",
                      "--given", str(given))
    execution = wait(s3_remote, name)
    summary, raw_file = execution.outputs["o0"].rsplit("|", 1)
    assert summary == "RED GREEN BLUE|one.txt,two.txt|12|from the laptop"
    assert raw_file.startswith(f"s3://{s3.bucket}/{ROOT}/raw/")
    # The input file pyflyte uploaded lies in the bucket, and the execution's input names it there.
    assert execution.inputs["given"].remote_source.startswith(f"s3://{s3.bucket}/{ROOT}/uploads/")

    # FlyteRemote reads the outputs from the bucket with the S3 settings of its own config (blob values
    # download through the current flytekit context, so it is given the remote's file access).
    ctx = FlyteContextManager.current_context()
    with FlyteContextManager.with_context(ctx.with_file_access(s3_remote.file_access)):
        ff = execution.outputs["o1"]
        with open(ff.download()) as f:
            assert f.read() == "RED GREEN BLUE"
        fd = execution.outputs["o2"]
        assert sorted(os.listdir(fd.download())) == ["one.txt", "two.txt"]
        frame = execution.outputs["o3"].open(pd.DataFrame).all()
        assert list(frame["word"]) == ["red", "green", "blue"]


def test_map_task_items_write_to_the_bucket(s3, s3_server, s3_remote, folder):
    name = run_remote(s3_server, folder, "s3_flows.py", "s3_map_wf", "--xs", "[1, 2, 3, 4, 5]")
    execution = wait(s3_remote, name)
    assert execution.outputs["o0"] == [1, 4, 9, 16, 25]
    assert execution.outputs["o1"] == 55
    outputs = [k for k in keys(s3, f"{ROOT}/metadata/propeller/flytesnacks-development-{name}/n0/")
               if k.endswith("outputs.pb")]
    assert len(outputs) >= 5, outputs


def test_deck_download_link_is_presigned_by_the_bucket(s3, s3_server, s3_remote, folder):
    name = run_remote(s3_server, folder, "s3_flows.py", "s3_deck_wf", "--x", "41")
    execution = wait(s3_remote, name)
    assert execution.outputs["o0"] == 42
    response = s3_remote.client.get_download_artifact_signed_url(
        node_id="n0", project="flytesnacks", domain="development", name=name,
        artifact_type=dataproxy_pb2.ARTIFACT_TYPE_DECK)
    url = response.signed_url[0]
    assert url.startswith(f"{s3.endpoint}/{s3.bucket}/{ROOT}/metadata/propeller/flytesnacks-development-{name}"
                          "/n0/data/0/deck.html?")
    with urllib.request.urlopen(url) as r:
        assert "deck of 41 in the bucket" in r.read().decode()
