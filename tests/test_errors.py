"""errors.as_outage on real failures of the dependencies: a database that refuses connections or has no room, a
blob store that cannot be reached, a full disk; anything else is not an outage."""

from __future__ import annotations

import socket

import pytest
from botocore.config import Config as BotoConfig
from botocore.session import get_session
from sqlalchemy import create_engine, text

from flytelite.errors import ResourceExhausted, Unavailable, as_outage


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raised(action) -> BaseException:
    with pytest.raises(Exception) as raised:
        action()
    return raised.value


def test_a_database_that_refuses_connections_is_unavailable_and_named():
    engine = create_engine(f"postgresql+psycopg://flyte@127.0.0.1:{_closed_port()}/flytelite")
    outage = as_outage(_raised(engine.connect))
    assert isinstance(outage, Unavailable) and outage.grpc_code == "UNAVAILABLE" and outage.http_status == 503
    assert str(outage).startswith("the database cannot be reached") and "Connection refused" in str(outage)


def test_a_database_with_no_room_left_is_resource_exhausted(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'small.db'}")

    def fill() -> None:
        with engine.begin() as conn:
            conn.execute(text("PRAGMA max_page_count = 8"))
            conn.execute(text("CREATE TABLE t (v TEXT)"))
            for _ in range(100):
                conn.execute(text("INSERT INTO t VALUES (:v)"), {"v": "x" * 4000})

    outage = as_outage(_raised(fill))
    assert isinstance(outage, ResourceExhausted) and outage.grpc_code == "RESOURCE_EXHAUSTED"
    assert str(outage).startswith("the database's disk is full") and "free some space" in str(outage)


def test_a_full_disk_is_resource_exhausted_naming_the_file():
    def write() -> None:
        with open("/dev/full", "w") as f:
            f.write("x")

    outage = as_outage(_raised(write))
    assert isinstance(outage, ResourceExhausted) and "No space left on device" in str(outage)


def test_a_blob_store_that_cannot_be_reached_is_unavailable():
    client = get_session().create_client(
        "s3", endpoint_url=f"http://127.0.0.1:{_closed_port()}", region_name="us-east-1",
        aws_access_key_id="k", aws_secret_access_key="s",
        config=BotoConfig(retries={"max_attempts": 1}, connect_timeout=2))
    outage = as_outage(_raised(lambda: client.head_object(Bucket="b", Key="k")))
    assert isinstance(outage, Unavailable) and str(outage).startswith("the blob store cannot be reached")


def test_other_failures_are_not_outages():
    assert as_outage(ValueError("a bug")) is None
    assert as_outage(FileNotFoundError(2, "No such file", "/x")) is None
