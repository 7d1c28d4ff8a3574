"""The benchmarks' no-op plugin: zero values by type, and the benchmarks' no-op server (a real server process)."""

from __future__ import annotations

import pytest
from flyteidl.core import literals_pb2, types_pb2
from flytekit.configuration import Config as FlyteConfig
from flytekit.remote import FlyteRemote

from benchmarks.noop_plugin import CannotMakeValue, zero_literal
from benchmarks.server_client import BenchServer
from tests.e2e.flyte_cli import run_remote

SIMPLE = types_pb2.SimpleType


@pytest.mark.parametrize(("literal_type", "expected"), [
    (types_pb2.LiteralType(simple=SIMPLE.INTEGER), literals_pb2.Literal(scalar=literals_pb2.Scalar(
        primitive=literals_pb2.Primitive(integer=0)))),
    (types_pb2.LiteralType(simple=SIMPLE.STRING), literals_pb2.Literal(scalar=literals_pb2.Scalar(
        primitive=literals_pb2.Primitive(string_value="")))),
    (types_pb2.LiteralType(simple=SIMPLE.BOOLEAN), literals_pb2.Literal(scalar=literals_pb2.Scalar(
        primitive=literals_pb2.Primitive(boolean=False)))),
    (types_pb2.LiteralType(collection_type=types_pb2.LiteralType(simple=SIMPLE.INTEGER)),
     literals_pb2.Literal(collection=literals_pb2.LiteralCollection())),
    (types_pb2.LiteralType(map_value_type=types_pb2.LiteralType(simple=SIMPLE.FLOAT)),
     literals_pb2.Literal(map=literals_pb2.LiteralMap())),
    (types_pb2.LiteralType(enum_type=types_pb2.EnumType(values=["red", "green"])),
     literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(string_value="red")))),
])
def test_zero_values_by_type(literal_type, expected):
    assert zero_literal(literal_type) == expected


def test_a_union_gets_its_first_variant_and_a_file_cannot_be_made_up():
    union = types_pb2.LiteralType(union_type=types_pb2.UnionType(variants=[
        types_pb2.LiteralType(simple=SIMPLE.INTEGER), types_pb2.LiteralType(simple=SIMPLE.NONE)]))
    got = zero_literal(union)
    assert got.scalar.union.value.scalar.primitive.integer == 0
    assert got.scalar.union.type == union.union_type.variants[0]
    with pytest.raises(CannotMakeValue, match="blob"):
        zero_literal(types_pb2.LiteralType(blob=types_pb2.BlobType()))


NOOP_FLOW = '''
from flytekit import map_task, task, workflow


@task
def noop_override_step(x: int) -> int:
    return x + 1  # really run, the workflow would output [7, 7, 7]


@workflow
def noop_override_wf(x: int = 5) -> list[int]:
    y = noop_override_step(x=x)
    return map_task(noop_override_step)(x=[y, y, y])
'''


def test_the_noop_server_runs_no_task(tmp_path):
    with BenchServer(tmp_path / "server", noop=True) as bench:
        server = bench.server
        folder = tmp_path / "wf"
        folder.mkdir()
        (folder / "noop_override_flow.py").write_text(NOOP_FLOW)
        name = run_remote(server, folder, "noop_override_flow.py", "noop_override_wf")
        remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                             default_domain="development")
        execution = remote.wait(remote.fetch_execution(name=name), timeout=60)
        assert execution.closure.phase == 4, execution.closure.error  # SUCCEEDED
        assert execution.outputs["o0"] == [0, 0, 0]
        assert "the benchmarks' no-op server: tasks are NOT run" in server.log_text()
        assert not (server.home / "logs" / f"flytesnacks-development-{name}").exists(), "no task process ran"
