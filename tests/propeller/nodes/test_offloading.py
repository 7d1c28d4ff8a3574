"""Literal offloading (propeller/nodes/offloading.py) with a real blob store: large values are written to a blob
of their own and replaced by their offloaded form; too large ones fail; tasks registered with an SDK that
cannot read offloaded inputs are refused before they start, as FlytePropeller's CheckOffloadingCompat does."""

from __future__ import annotations

import pytest
from flyteidl.core import literals_pb2, tasks_pb2

from flytelite.config import LiteralOffloadingConfig
from flytelite.propeller.nodes.offloading import LiteralTooLarge, offload_large_literal, offloading_refusal
from flytelite.storage import BlobStore
from tests.propeller import harness as h

MB = 1024 * 1024
CFG = LiteralOffloadingConfig(min_size_mb=1, max_size_mb=3)


def _strings(total: int) -> literals_pb2.Literal:
    return h.literal(["z" * 1024] * (total // 1024))


def test_large_list_is_offloaded_and_reads_back(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    uri = blobs.join(blobs.metadata_prefix(), "x", "o0_offloaded_metadata.pb")
    value = _strings(2 * MB)
    original = literals_pb2.Literal()
    original.CopyFrom(value)

    assert offload_large_literal(blobs, uri, value, CFG)
    meta = value.offloaded_metadata
    assert meta.uri == uri and meta.size_bytes == original.ByteSize()
    assert meta.inferred_type.collection_type.simple == 3  # STRING
    assert value.hash and value.ByteSize() < 1024
    assert blobs.read_proto(uri, literals_pb2.Literal) == original


def test_small_values_stay_inline_and_huge_ones_fail(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    small = _strings(MB // 2)
    assert not offload_large_literal(blobs, blobs.join(blobs.metadata_prefix(), "s.pb"), small, CFG)
    assert small.HasField("collection")
    with pytest.raises(LiteralTooLarge, match="max_size_mb"):
        offload_large_literal(blobs, blobs.join(blobs.metadata_prefix(), "h.pb"), _strings(3 * MB), CFG)
    off = LiteralOffloadingConfig(enabled=False)
    assert not offload_large_literal(blobs, blobs.join(blobs.metadata_prefix(), "d.pb"), _strings(2 * MB), off)


def _task(version: str) -> tasks_pb2.TaskTemplate:
    task = tasks_pb2.TaskTemplate()
    task.id.name = "consumer"
    task.metadata.runtime.type = tasks_pb2.RuntimeMetadata.FLYTE_SDK
    task.metadata.runtime.version = version
    return task


def test_old_sdks_cannot_consume_offloaded_inputs():
    inputs = literals_pb2.LiteralMap()
    inputs.literals["a"].offloaded_metadata.uri = "s3://b/a.pb"
    plain = h.literal_map({"a": 1})

    assert offloading_refusal(CFG, inputs, _task("1.16.31")) is None
    assert offloading_refusal(CFG, inputs, _task("v1.13.14b0")) is None
    assert offloading_refusal(CFG, plain, _task("1.10.0")) is None
    refused = offloading_refusal(CFG, inputs, _task("1.10.0"))
    assert refused.error.code == "LiteralOffloadingNotSupported" and "1.13.14" in refused.error.message
    disabled = offloading_refusal(LiteralOffloadingConfig(enabled=False), inputs, _task("1.10.0"))
    assert disabled.error.code == "LiteralOffloadingDisabled"
