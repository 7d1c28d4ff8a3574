"""The HTTP ends of signed URLs, over a real HTTP server: PUT uploads and GET downloads."""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import timedelta

import pytest
import requests
from flyteidl.service import dataproxy_pb2
from google.protobuf import duration_pb2

from flytelite.admin.dataproxy import DataProxyService
from flytelite.storage.blobstore import local_path
from flytelite.storage.signing import Grant, UrlSigner, upload_url


def md5(data: bytes) -> bytes:
    return hashlib.md5(data).digest()


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def location(console, data: bytes, filename: str = "fast123.tar.gz", **kw) -> dataproxy_pb2.CreateUploadLocationResponse:
    request = dataproxy_pb2.CreateUploadLocationRequest(project="flytesnacks", domain="development",
                                                        content_md5=md5(data), filename=filename, **kw)
    return DataProxyService(console.ctx).CreateUploadLocation(request, None)


def leftovers(console) -> list[str]:
    found = []
    for folder, _dirs, files in os.walk(console.ctx.blobs.folder):
        found += [os.path.join(folder, f) for f in files]
    return found


def test_put_stores_the_body_at_native_url(console):
    data = os.urandom(200_000)
    loc = location(console, data)
    assert loc.signed_url.startswith(console.url + "/dataproxy/upload/")
    resp = requests.put(loc.signed_url, data=data, headers={"Content-MD5": b64(md5(data)), **loc.headers})
    assert resp.status_code == 200, resp.text
    # A local store hands out local:// URIs (flytekit treats them as remote, fsspec opens them as files).
    assert loc.native_url.startswith("local:///")
    with open(local_path(loc.native_url), "rb") as f:
        assert f.read() == data
    assert leftovers(console) == [local_path(loc.native_url)]


def test_put_without_content_md5_header_still_checks_the_signed_md5(console):
    data = b"hello"
    loc = location(console, data)
    assert requests.put(loc.signed_url, data=b"hellO").status_code == 400
    assert requests.put(loc.signed_url, data=data).status_code == 200


def test_body_that_does_not_match_its_md5_is_refused_and_not_stored(console):
    data = b"the real content"
    loc = location(console, data)
    resp = requests.put(loc.signed_url, data=b"something else!!", headers={"Content-MD5": b64(md5(data))})
    assert resp.status_code == 400
    assert "MD5" in resp.text and "upload it again" in resp.text
    assert leftovers(console) == []


def test_content_md5_header_other_than_the_signed_one_is_refused(console):
    data = b"abc"
    loc = location(console, data)
    resp = requests.put(loc.signed_url, data=b"xyz", headers={"Content-MD5": b64(md5(b"xyz"))})
    assert resp.status_code == 400 and "differs from the MD5" in resp.text
    resp = requests.put(loc.signed_url, data=data, headers={"Content-MD5": "not base64!"})
    assert resp.status_code == 400 and "16-byte MD5" in resp.text
    assert leftovers(console) == []


def test_bad_signature_is_403(console):
    data = b"abc"
    loc = location(console, data)
    payload, mac = loc.signed_url.rsplit("/", 1)[1].split(".")
    forged = UrlSigner(b"x" * 32).sign(Grant("PUT", "uploads/evil.txt", 2**40))
    for token in [f"{payload}.{mac[::-1]}", forged, "garbage"]:
        resp = requests.put(upload_url(console.url, token), data=data)
        assert resp.status_code == 403, token
        assert "signature is invalid" in resp.text
    assert leftovers(console) == []


def test_expired_url_is_403(console):
    data = b"abc"
    loc = location(console, data, expires_in=duration_pb2.Duration(seconds=1))
    service_now = console.ctx.clock.now

    class Later:
        def now(self):
            return service_now() + timedelta(seconds=5)

    console.ctx.clock = Later()
    resp = requests.put(loc.signed_url, data=data)
    assert resp.status_code == 403 and "expired" in resp.text


def test_download_url_cannot_upload(console):
    path = f"{console.ctx.blobs.root}/some/file.txt"
    console.ctx.blobs.write_bytes(path, b"content")
    response = DataProxyService(console.ctx).CreateDownloadLocation(
        dataproxy_pb2.CreateDownloadLocationRequest(native_url=path), None)
    get = requests.get(response.signed_url)
    assert get.status_code == 200 and get.content == b"content"
    token = response.signed_url.split("/dataproxy/download/")[1].split("/")[0]
    resp = requests.put(upload_url(console.url, token), data=b"overwrite")
    assert resp.status_code == 403 and "signed for GET, not PUT" in resp.text
    assert console.ctx.blobs.read_bytes(path) == b"content"


def test_upload_url_cannot_download(console):
    loc = location(console, b"abc")
    token = loc.signed_url.rsplit("/", 1)[1]
    assert requests.get(f"{console.url}/dataproxy/download/{token}/x").status_code == 403


def test_oversized_upload_is_413(console):
    limit = console.ctx.config.max_upload_bytes
    data = b"x" * (limit + 1)
    loc = location(console, data)
    resp = requests.put(loc.signed_url, data=data, headers={"Content-MD5": b64(md5(data))})
    assert resp.status_code == 413 and "max_upload_bytes" in resp.text
    assert leftovers(console) == []


def test_oversized_chunked_upload_is_413(console):
    limit = console.ctx.config.max_upload_bytes
    loc = location(console, b"whatever")

    def chunks():
        # No Content-Length: the server must count while streaming.
        for _ in range(limit // 65536 + 2):
            yield b"y" * 65536

    try:
        resp = requests.put(loc.signed_url, data=chunks())
        assert resp.status_code == 413
    except requests.ConnectionError:
        pass  # the server may close the connection while the client is still sending; nothing may be stored
    assert leftovers(console) == []


def test_signed_path_escaping_through_a_symlink_is_refused(console, tmp_path):
    blobs = console.ctx.blobs
    outside = tmp_path / "outside"
    outside.mkdir()
    uploads = local_path(blobs.uploads_prefix())
    os.makedirs(f"{uploads}/flytesnacks/development")
    os.symlink(outside, f"{uploads}/flytesnacks/development/root")
    with pytest.raises(Exception, match="not inside flytelite's blob store"):
        location(console, b"abc", filename_root="root")
    assert list(outside.iterdir()) == []


def test_traversal_in_the_url_path_does_not_reach_the_handler(console):
    loc = location(console, b"abc")
    token = loc.signed_url.rsplit("/", 1)[1]
    # requests keeps the dot segments as sent.
    resp = requests.put(f"{console.url}/dataproxy/upload/{token}/../../../etc/passwd", data=b"abc")
    assert resp.status_code in (404, 405)


def test_deck_download_link(console):
    from flyteidl.admin import node_execution_pb2

    from flytelite.store.models import NodeExecution

    ctx = console.ctx
    deck = f"{ctx.blobs.execution_dir('flytesnacks', 'development', 'e1')}/n0/data/0/deck.html"
    ctx.blobs.write_bytes(deck, b"<html>deck</html>")
    now = ctx.clock.now()
    with ctx.db.session() as s:
        s.add(NodeExecution(project="flytesnacks", domain="development", execution_name="e1", node_id="n0",
                            closure_pb=node_execution_pb2.NodeExecutionClosure(deck_uri=deck).SerializeToString(),
                            metadata_pb=b"", created_at=now, updated_at=now))
    request = dataproxy_pb2.CreateDownloadLinkRequest(artifact_type=dataproxy_pb2.ARTIFACT_TYPE_DECK)
    request.node_execution_id.node_id = "n0"
    request.node_execution_id.execution_id.project = "flytesnacks"
    request.node_execution_id.execution_id.domain = "development"
    request.node_execution_id.execution_id.name = "e1"
    link = DataProxyService(ctx).CreateDownloadLink(request, None)
    assert link.pre_signed_urls.signed_url == link.signed_url
    got = requests.get(link.signed_url[0])
    assert got.status_code == 200 and got.text == "<html>deck</html>" and got.headers["content-type"].startswith("text/html")
