"""The local blob store's writes: whole files for readers, in place only where no one reads yet."""

from __future__ import annotations

import errno
import os

import pytest
from flyteidl.core import literals_pb2

from flytelite.storage import BlobStore


def _literals(value: int) -> literals_pb2.LiteralMap:
    lm = literals_pb2.LiteralMap()
    lm.literals["x"].scalar.primitive.integer = value
    return lm


def test_an_unread_proto_is_written_in_place_when_new_and_replaced_whole_when_there(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    path = f"{blobs.execution_dir('p', 'd', 'e')}/n0/data/inputs.pb"
    blobs.write_unread_proto(path, _literals(1))  # its folders are new too
    file = blobs.local_file(path)
    assert blobs.read_proto(path, literals_pb2.LiteralMap) == _literals(1)
    first_inode = os.stat(file).st_ino
    # A reader that opened it (a task an earlier life of the server started) keeps reading what it opened.
    with open(file, "rb") as reader:
        blobs.write_unread_proto(path, _literals(2))
        assert literals_pb2.LiteralMap.FromString(reader.read()) == _literals(1)
    assert os.stat(file).st_ino != first_inode
    assert blobs.read_proto(path, literals_pb2.LiteralMap) == _literals(2)
    assert sorted(os.listdir(os.path.dirname(file))) == ["inputs.pb"]  # no temporary file left


def test_a_short_unread_proto_left_by_a_crash_is_replaced_whole(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    path = f"{blobs.execution_dir('p', 'd', 'e')}/n0/data/inputs.pb"
    blobs.write_unread_proto(path, _literals(123456789))
    file = blobs.local_file(path)
    with open(file, "r+b") as f:
        f.truncate(3)
    blobs.write_unread_proto(path, _literals(123456789))
    assert blobs.read_proto(path, literals_pb2.LiteralMap) == _literals(123456789)


def test_writes_a_full_disk_cuts_short_leave_nothing_behind(small_disk):
    blobs = BlobStore(str(small_disk / "blobs"))
    big = literals_pb2.LiteralMap()
    big.literals["x"].scalar.primitive.string_value = "x" * (80 << 20)  # more than the 64 MiB disk holds
    for write, name in ((blobs.write_proto, "outputs.pb"), (blobs.write_unread_proto, "inputs.pb")):
        path = f"{blobs.execution_dir('p', 'd', 'e')}/n0/data/{name}"
        with pytest.raises(OSError) as raised:
            write(path, big)
        assert raised.value.errno == errno.ENOSPC
        assert not blobs.exists(path)
        assert os.listdir(os.path.dirname(blobs.local_file(path))) == [], "a partial file was left"


def test_a_folders_files_are_listed_in_name_order(tmp_path):
    store = BlobStore(str(tmp_path / "blobs"))
    folder = store.join(store.raw_output_prefix(), "ab", "frame")
    for name in ("b/2", "a", "b/1", "c/d/e"):
        store.write_bytes(store.join(folder, name), name.encode())
    assert store.files(folder, 10) == [store.join(folder, name) for name in ("a", "b/1", "b/2", "c/d/e")]
    assert store.files(folder, 2) == [store.join(folder, "a"), store.join(folder, "b/1")]
    assert store.files(store.join(folder, "a"), 10) is None
    assert store.files(store.join(folder, "nothing"), 10) is None
