"""DataProxyService against the real server process, driven by real flytekit."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import grpc
import pytest
import requests
from flyteidl.service import dataproxy_pb2, dataproxy_pb2_grpc
from google.protobuf import duration_pb2

from flytelite.storage.blobstore import local_path

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.endpoint)
    yield dataproxy_pb2_grpc.DataProxyServiceStub(channel)
    channel.close()


def test_flyteremote_upload_file_lands_at_native_url(remote, server, tmp_path):
    local = tmp_path / "fast0123456789.tar.gz"
    local.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    md5_bytes, native_url = remote.upload_file(local)
    assert md5_bytes == hashlib.md5(local.read_bytes()).digest()
    # Flyte's layout: <uploads>/<project>/<domain>/<base32 md5>/<filename>, as a local:// URI.
    expected_root = base64.b32encode(md5_bytes).decode()
    assert native_url == "local://" + str(server.home / "blobs" / "uploads" / "flytesnacks" / "development"
                                          / expected_root / local.name)
    assert Path(local_path(native_url)).read_bytes() == local.read_bytes()
    # Uploading the same file again is fine (pyflyte run re-uploads unchanged code).
    assert remote.upload_file(local)[1] == native_url


def test_upload_with_filename_root_like_flytefs(remote, server):
    # flytekit's HttpFileWriter asks with neither content_md5 nor filename; the server picks a name.
    loc = remote.client.get_upload_signed_url("flytesnacks", "development", None, None, filename_root="rootabc")
    assert loc.native_url.startswith("local://" + str(server.home / "blobs" / "uploads" / "flytesnacks"
                                                      / "development" / "rootabc") + "/")
    assert dict(loc.headers) == {}
    resp = requests.put(loc.signed_url, data=b"some dataframe bytes")
    assert resp.ok, resp.text
    assert Path(local_path(loc.native_url)).read_bytes() == b"some dataframe bytes"


def test_named_upload_cannot_replace_different_content(remote, tmp_path, stub):
    first = tmp_path / "data.csv"
    first.write_text("a,b\n1,2\n")
    _, native_url = remote.upload_file(first, filename_root="fixedroot")
    assert remote.upload_file(first, filename_root="fixedroot")[1] == native_url  # same bytes: accepted
    request = dataproxy_pb2.CreateUploadLocationRequest(
        project="flytesnacks", domain="development", filename="data.csv", filename_root="fixedroot",
        content_md5=hashlib.md5(b"other").digest())
    with pytest.raises(grpc.RpcError) as err:
        stub.CreateUploadLocation(request)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "different content" in err.value.details()


@pytest.mark.parametrize(("fields", "message"), [
    ({"domain": "development", "content_md5": b"0" * 16}, "needs both project and domain"),
    ({"project": "flytesnacks", "content_md5": b"0" * 16}, "needs both project and domain"),
    ({"project": "flytesnacks", "domain": "development", "filename": "x"}, "content_md5"),
    ({"project": "flytesnacks", "domain": "development", "content_md5": b"short"}, "16-byte MD5"),
    ({"project": "flytesnacks", "domain": "development", "content_md5": b"0" * 16, "filename": "../../etc/x"},
     "not a plain relative path"),
    ({"project": "flytesnacks", "domain": "development", "content_md5": b"0" * 16,
      "expires_in": duration_pb2.Duration(seconds=10**7)}, "upload_url_seconds"),
])
def test_invalid_requests_are_invalid_argument(stub, fields, message):
    with pytest.raises(grpc.RpcError) as err:
        stub.CreateUploadLocation(dataproxy_pb2.CreateUploadLocationRequest(**fields))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in err.value.details()


def test_download_location_serves_the_blob(remote, tmp_path, stub):
    local = tmp_path / "model.bin"
    local.write_bytes(b"\x00weights\xff" * 1000)
    _, native_url = remote.upload_file(local)
    loc = remote.client.get_download_signed_url(native_url)
    assert loc.signed_url.endswith("/model.bin")
    got = requests.get(loc.signed_url)
    assert got.status_code == 200 and got.content == local.read_bytes()
    with pytest.raises(grpc.RpcError) as err:
        stub.CreateDownloadLocation(dataproxy_pb2.CreateDownloadLocationRequest(native_url="/etc/passwd"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not inside flytelite's blob store" in err.value.details()


def test_download_link_of_unknown_node_is_not_found(stub):
    request = dataproxy_pb2.CreateDownloadLinkRequest(artifact_type=dataproxy_pb2.ARTIFACT_TYPE_DECK)
    request.node_execution_id.node_id = "n0"
    request.node_execution_id.execution_id.project = "flytesnacks"
    request.node_execution_id.execution_id.domain = "development"
    request.node_execution_id.execution_id.name = "doesnotexist"
    with pytest.raises(grpc.RpcError) as err:
        stub.CreateDownloadLink(request)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_get_data_refuses_a_uri_it_cannot_parse(stub):
    with pytest.raises(grpc.RpcError) as err:
        stub.GetData(dataproxy_pb2.GetDataRequest(flyte_url="flyte://v1/x"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "failed to parse artifact url 'flyte://v1/x'" in err.value.details()
