"""The blob store on S3 (a real moto server): settings, layout, bytes, and presigned links."""

from __future__ import annotations

import base64
import hashlib
import urllib.request
from urllib.parse import urlsplit

import pytest
import requests
from flyteidl.core import literals_pb2

from flytelite.config import Config, S3Config
from flytelite.errors import InvalidArgument
from flytelite.storage import BlobStore
from flytelite.storage.links import PresignedLinks, ServerLinks, blob_links
from flytelite.storage.s3 import split_uri, task_environment
from flytelite.storage.signing import SignedBlobs, UrlSigner


def s3_settings(s3, **extra) -> S3Config:
    return S3Config(endpoint=s3.endpoint, access_key_id=s3.access_key_id, secret_access_key=s3.secret_access_key,
                    **extra)


@pytest.fixture
def store(s3, request) -> BlobStore:
    # A prefix of the test's own keeps tests apart in the one bucket.
    return BlobStore(f"s3://{s3.bucket}/unit/{request.node.name}", s3_settings(s3))


# -- settings -----------------------------------------------------------------------------------------
def test_resolved_settings_fall_back_to_the_aws_variables():
    env = {"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_S3": "http://s3only:2", "AWS_REGION": "eu-west-3",
           "AWS_DEFAULT_REGION": "us-west-2"}
    cfg = S3Config().resolved(env)
    assert (cfg.endpoint, cfg.public_endpoint, cfg.region, cfg.addressing_style) == (
        "http://s3only:2", "http://s3only:2", "eu-west-3", "path")
    assert S3Config().resolved({}).addressing_style == "auto"
    mine = S3Config(endpoint="http://mine:3", region="ap-south-1", public_endpoint="http://outside:4").resolved(env)
    assert (mine.endpoint, mine.public_endpoint, mine.region) == ("http://mine:3", "http://outside:4", "ap-south-1")


def test_settings_refuse_half_a_key_pair_and_unknown_addressing():
    with pytest.raises(ValueError, match="set both or neither"):
        S3Config(access_key_id="only")
    with pytest.raises(ValueError, match="addressing_style"):
        S3Config(addressing_style="sideways")


def test_config_file_has_an_s3_section(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text("storage_root: s3://b/p\ns3:\n  endpoint: http://localhost:30002\n  region: us-east-2\n")
    cfg = Config.load(path)
    assert cfg.blob_root == "s3://b/p"
    assert (cfg.s3.endpoint, cfg.s3.region) == ("http://localhost:30002", "us-east-2")


def test_tasks_get_flytekits_own_variables():
    cfg = S3Config(endpoint="http://s3:9000", region="us-east-2", access_key_id="k", secret_access_key="s")
    assert task_environment(cfg) == {
        "FLYTE_AWS_ENDPOINT": "http://s3:9000", "FLYTE_AWS_ACCESS_KEY_ID": "k", "FLYTE_AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "us-east-2"}
    # Credentials that come from the environment reach tasks by inheritance (session tokens included).
    assert task_environment(S3Config(endpoint="http://s3:9000")) == {"FLYTE_AWS_ENDPOINT": "http://s3:9000"}


def test_split_uri():
    assert split_uri("s3://bucket/a/b.pb") == ("bucket", "a/b.pb")
    with pytest.raises(ValueError):
        split_uri("gs://bucket/a")


# -- layout and bytes -----------------------------------------------------------------------------------
def test_layout_follows_flyte_on_s3_and_stays_put_locally(store, s3, tmp_path):
    assert store.execution_dir("p", "d", "x") == f"{store.root}/metadata/propeller/p-d-x"
    assert store.raw_output_prefix() == f"{store.root}/raw"
    local = BlobStore(str(tmp_path / "blobs"))
    assert local.execution_dir("p", "d", "x") == f"local://{tmp_path}/blobs/metadata/p-d-x"
    assert local.task_environment() == {}
    assert store.task_environment()["FLYTE_AWS_ENDPOINT"] == s3.endpoint


def test_bytes_and_protos_round_trip_through_the_bucket(store, s3):
    path = store.join(store.execution_dir("p", "d", "x"), "n0", "data", "inputs.pb")
    assert not store.exists(path)
    assert store.read_proto_if_exists(path, literals_pb2.LiteralMap) is None
    lm = literals_pb2.LiteralMap()
    lm.literals["a"].scalar.primitive.integer = 7
    store.write_proto(path, lm)
    assert store.exists(path)
    assert store.read_proto(path, literals_pb2.LiteralMap).literals["a"].scalar.primitive.integer == 7
    assert store.size(path) == len(lm.SerializeToString())
    # It is a real object in the bucket, under Flyte's key layout.
    bucket, key = split_uri(path)
    body = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == lm.SerializeToString() and "/metadata/propeller/p-d-x/n0/data/inputs.pb" in key
    store.delete(store.execution_dir("p", "d", "x"))
    assert not store.exists(path)


def test_a_folders_files_are_listed_in_name_order(store, s3):
    folder = store.join(store.raw_output_prefix(), "ab", "frame")
    for name in ("b/2", "a", "b/1"):
        store.write_bytes(store.join(folder, name), name.encode())
    assert store.files(folder, 10) == [store.join(folder, name) for name in ("a", "b/1", "b/2")]
    assert store.files(folder, 2) == [store.join(folder, "a"), store.join(folder, "b/1")]
    assert store.files(store.join(folder, "a"), 10) is None  # a file, not a folder
    assert store.files(store.join(folder, "nothing"), 10) is None


def test_relative_paths_stay_inside_the_prefix(store, s3):
    assert store.relative(store.join(store.root, "a/b")) == "a/b"
    assert store.relative(store.root) == ""
    assert store.relative(f"s3://{s3.bucket}/elsewhere/a") is None
    assert not store.contains(store.root + "-sibling/a")


# -- presigned links ------------------------------------------------------------------------------------
def test_links_of_an_s3_store_are_the_buckets_presigned_urls(store, s3, tmp_path):
    links = blob_links(store, SignedBlobs(store, UrlSigner(b"k" * 32)), lambda: "http://flytelite:1")
    assert isinstance(links, PresignedLinks)
    assert isinstance(blob_links(BlobStore(str(tmp_path)), SignedBlobs(store, UrlSigner(b"k" * 32)), lambda: ""),
                      ServerLinks)

    path = store.join(store.uploads_prefix(), "p/d/root/file.txt")
    data = b"straight into the bucket"
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    put_url = links.upload(path, now=0, seconds=60, content_md5=md5)
    assert urlsplit(put_url).netloc == urlsplit(s3.endpoint).netloc
    assert urlsplit(put_url).path == f"/{s3.bucket}/{split_uri(path)[1]}"
    rsp = requests.put(put_url, data=data, headers={"Content-MD5": md5}, timeout=10)
    assert rsp.status_code == 200, rsp.text
    assert store.read_bytes(path) == data

    get_url = links.download(path, now=0, seconds=60)
    assert urlsplit(get_url).netloc == urlsplit(s3.endpoint).netloc and "X-Amz-Signature=" in get_url
    with urllib.request.urlopen(get_url) as r:
        assert r.read() == data
    # (moto's server does not check signatures, as S3 and MinIO do: a tampered link is not tested here.)


def test_links_refuse_blobs_outside_the_store(store, s3):
    links = blob_links(store, SignedBlobs(store, UrlSigner(b"k" * 32)), lambda: "")
    with pytest.raises(InvalidArgument, match="not inside"):
        links.download(f"s3://{s3.bucket}/elsewhere/secret", now=0, seconds=60)
    with pytest.raises(InvalidArgument):
        links.upload(store.join(store.root, "a/../../escape"), now=0, seconds=60)


def test_links_name_the_public_endpoint(s3):
    store = BlobStore(f"s3://{s3.bucket}/public", s3_settings(s3, public_endpoint="http://s3.example.com:9000"))
    url = store.presigner.get(store.join(store.root, "a.txt"), 60)
    assert url.startswith(f"http://s3.example.com:9000/{s3.bucket}/public/a.txt?")
