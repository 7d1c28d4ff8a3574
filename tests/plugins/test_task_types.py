"""Raw containers run as local processes: the copilot data protocol, and the plugin on a real engine and store."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta

import pytest
from flyteidl.core import interface_pb2, literals_pb2, tasks_pb2, types_pb2
from flytekit import ContainerTask, kwtypes, workflow

from flytelite.config import Config, EngineConfig
from flytelite.plugins.machinery import copilot
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.server.app import build_context
from flytelite.storage import BlobStore
from flytelite.testing import database_url_for
from tests.e2e.flyte_cli import wait_for
from tests.propeller import harness as h

IMAGE = "localhost/flytelite-unit/sh:1"


# -- the data protocol ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, text", [(3.0, "3"), (0.5, "0.5"), (1e20, "100000000000000000000"),
                                         (-2.25, "-2.25"), (1e-7, "0.0000001"), (float("inf"), "+Inf")])
def test_floats_are_written_as_go_writes_them(value, text):
    assert copilot.go_float(value) == text


@pytest.mark.parametrize("delta, text", [(timedelta(0), "0s"), (timedelta(seconds=1.5), "1.5s"),
                                         (timedelta(milliseconds=300), "300ms"),
                                         (timedelta(hours=1, minutes=2, seconds=3), "1h2m3s"),
                                         (timedelta(minutes=5), "5m0s"), (timedelta(microseconds=2), "2µs")])
def test_durations_round_trip_through_go_text(delta, text):
    assert copilot.go_duration(delta) == text
    assert copilot.parse_go_duration(text) == delta


def test_bad_duration_text_is_refused():
    with pytest.raises(ValueError, match="not a duration"):
        copilot.parse_go_duration("5 minutes")


def test_inputs_are_laid_out_as_files(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    doc = f"{blobs.root}/raw/ab/doc.txt"
    blobs.write_bytes(doc, b"document")
    inputs = h.literal_map({"n": 4, "ratio": 0.25, "name": "x y", "flag": True, "xs": [1, 2]})
    inputs.literals["doc"].CopyFrom(literals_pb2.Literal(scalar=literals_pb2.Scalar(blob=literals_pb2.Blob(
        uri=doc, metadata=literals_pb2.BlobMetadata(type=types_pb2.BlobType())))))
    out = tmp_path / "inputs"
    copilot.write_inputs(blobs, inputs, out, tasks_pb2.DataLoadingConfig.JSON)
    assert (out / "n").read_text() == "4" and (out / "ratio").read_text() == "0.25"
    assert (out / "name").read_text() == "x y" and (out / "flag").read_text() == "true"
    assert (out / "xs" / "0").read_text() == "1" and (out / "xs" / "1").read_text() == "2"
    assert (out / "doc").read_bytes() == b"document"
    assert json.loads((out / "inputs.json").read_text()) == {
        "n": 4, "ratio": 0.25, "name": "x y", "flag": True, "xs": [1, 2], "doc": str(out / "doc")}
    local = literals_pb2.LiteralMap.FromString((out / "inputs.pb").read_bytes())
    assert local.literals["doc"].scalar.blob.uri == str(out / "doc")


def _outputs(**types) -> interface_pb2.VariableMap:
    return interface_pb2.VariableMap(variables={k: interface_pb2.Variable(type=t) for k, t in types.items()})


def test_outputs_are_read_from_files_and_folders(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    out = tmp_path / "outputs"
    (out / "folder").mkdir(parents=True)
    (out / "count").write_text(" 42\n")
    (out / "ok").write_text("T")
    (out / "when").write_text("2024-01-31T12:00:00Z")
    (out / "file").write_text("a file")
    (out / "folder" / "part").write_text("a part")
    simple = types_pb2.SimpleType
    got = copilot.read_outputs(blobs, _outputs(
        count=types_pb2.LiteralType(simple=simple.INTEGER), ok=types_pb2.LiteralType(simple=simple.BOOLEAN),
        when=types_pb2.LiteralType(simple=simple.DATETIME), file=types_pb2.LiteralType(blob=types_pb2.BlobType()),
        folder=types_pb2.LiteralType(blob=types_pb2.BlobType(dimensionality=types_pb2.BlobType.MULTIPART)),
    ), out, f"{blobs.root}/raw/xy")
    assert got.literals["count"].scalar.primitive.integer == 42
    assert got.literals["ok"].scalar.primitive.boolean is True
    assert got.literals["when"].scalar.primitive.datetime.seconds == 1706702400
    file_blob = got.literals["file"].scalar.blob
    assert blobs.read_bytes(file_blob.uri) == b"a file" and file_blob.uri == f"{blobs.root}/raw/xy/file"
    folder = got.literals["folder"].scalar.blob
    assert folder.metadata.type.dimensionality == types_pb2.BlobType.MULTIPART
    assert blobs.read_bytes(f"{folder.uri}/part") == b"a part"


def test_an_error_file_or_a_bad_output_is_reported_clearly(tmp_path):
    blobs = BlobStore(str(tmp_path / "blobs"))
    out = tmp_path / "outputs"
    out.mkdir()
    ints = _outputs(n=types_pb2.LiteralType(simple=types_pb2.SimpleType.INTEGER))
    with pytest.raises(copilot.OutputError, match=r"output 'n' was not written: expected a file at .*/outputs/n"):
        copilot.read_outputs(blobs, ints, out, f"{blobs.root}/raw/x")
    (out / "n").write_text("forty-two")
    with pytest.raises(copilot.OutputError, match=r"output 'n' \(INTEGER\) could not be read from 'forty-two'"):
        copilot.read_outputs(blobs, ints, out, f"{blobs.root}/raw/x")
    (out / "_ERROR").write_text("the input made no sense")
    with pytest.raises(copilot.ContainerReportedError, match="the input made no sense"):
        copilot.read_outputs(blobs, ints, out, f"{blobs.root}/raw/x")


def test_raw_container_images_map_to_local_runners(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text('raw_container_images:\n  "a:1": local\n  "b:1": "nice -n 5"\n')
    cfg = Config.load(config)
    assert cfg.raw_container_runner("a:1") == []
    assert cfg.raw_container_runner("b:1") == ["nice", "-n", "5"]
    assert cfg.raw_container_runner("c:1") is None


# -- the plugin on the engine, with real processes ------------------------------------------------
def _container(name: str, script: str, image: str = IMAGE) -> ContainerTask:
    return ContainerTask(name=name, image=image, input_data_dir="/var/inputs", output_data_dir="/var/outputs",
                         inputs=kwtypes(a=int), outputs=kwtypes(b=int), command=["sh", "-c", script])


tt_double = _container("tt_double", "echo $(( {{.inputs.a}} * 2 )) > /var/outputs/b && cat /var/inputs/a")
tt_reports = _container("tt_reports", "echo 'a is {{.inputs.a}}, too small' > /var/outputs/_ERROR")
tt_exits = _container("tt_exits", "echo going down; exit 3")
tt_killed = _container("tt_killed", "kill -9 $$")
tt_nowhere = _container("tt_nowhere", "true", image="registry.example/not-mapped:2")


@workflow
def tt_double_wf(a: int) -> int:
    return tt_double(a=a)


@workflow
def tt_reports_wf(a: int) -> int:
    return tt_reports(a=a)


@workflow
def tt_exits_wf(a: int) -> int:
    return tt_exits(a=a)


@workflow
def tt_killed_wf(a: int) -> int:
    return tt_killed(a=a)


@workflow
def tt_nowhere_wf(a: int) -> int:
    return tt_nowhere(a=a)


def run_container_workflow(tmp_path, wf, name: str):
    config = Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home"), raw_container_images={IMAGE: "local"},
                    engine=EngineConfig(resync_seconds=30.0, max_system_retries=1, warm_workers=False))
    ctx = build_context(config)
    key = h.create_execution(ctx, h.compile_entity(wf), {"a": 21}, name)
    sink = h.RecordingSink()

    async def go():
        engine = Engine(ctx, sink)
        await engine.start()
        try:
            return await h.run_to_completion(engine, ctx, key)
        finally:
            await engine.stop()

    return ctx, key, asyncio.run(go()), sink


def test_container_command_runs_with_its_inputs_and_outputs(tmp_path):
    ctx, key, status, sink = run_container_workflow(tmp_path, tt_double_wf, "ttdouble")
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 42}
    assert [e.task_type for e in sink.task_events("n0")][-1] == "raw-container"
    assert sink.task_events("n0")[-1].metadata.plugin_identifier == "raw-container"
    # The attempt's folders are deleted in the background once it finished; engine.stop() does not wait for
    # that, and moves what is left into the trash (tests/plugins/local/test_plugin.py tests both).
    trash = ctx.config.work_dir / ".trash"
    wait_for(lambda: not [folder for folder, _, _ in os.walk(ctx.config.work_dir)
                          if folder.endswith("/outputs") and not folder.startswith(f"{trash}/")],
             "the attempt's folders to be deleted or moved into the trash")


@pytest.mark.parametrize("wf, code, kind, text, attempts", [
    (tt_reports_wf, "ContainerError", "USER", "User Error: a is 21, too small", 1),
    (tt_exits_wf, "ContainerFailed", "USER", "exited with code 3; the end of its log:\ngoing down", 1),
    # SIGKILL is a system error (as Flyte treats a killed pod): retried within max_system_retries=1.
    (tt_killed_wf, "Interrupted", "SYSTEM", "was killed by signal SIGKILL", 2),
])
def test_container_failures_are_reported_as_flyte_reports_failed_pods(tmp_path, wf, code, kind, text, attempts):
    _, _, status, sink = run_container_workflow(tmp_path, wf, "ttfails")
    assert status.phase == WorkflowStatusPhase.FAILED
    node = status.nodes["n0"]
    assert node.phase == NodeStatusPhase.FAILED and node.attempts + 1 == attempts
    err = sink.task_events("n0")[-1].error
    assert err.code == code and text in err.message
    assert (err.kind == 2) == (kind == "SYSTEM")


def test_an_unmapped_image_fails_naming_the_image_and_the_config_key(tmp_path):
    _, _, status, sink = run_container_workflow(tmp_path, tt_nowhere_wf, "ttnowhere")
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert err.code == "ImageNotMapped" and err.kind == 1
    assert "'registry.example/not-mapped:2'" in err.message
    assert "raw_container_images: {'registry.example/not-mapped:2': local}" in err.message
