"""Template variables in container args, as flyteplugins renders them."""

from __future__ import annotations

import pytest
from flyteidl.core import literals_pb2

from flytelite.plugins.machinery.template import TemplateError, TemplateParams, render
from tests.propeller.harness import literal, literal_map

calls = []


def params(**kw) -> TemplateParams:
    base = dict(
        input_uri="/b/n0/data/inputs.pb", input_prefix="/b/n0/data", output_prefix="/b/n0/data/1",
        raw_output_prefix="/b/raw/ab/x_n0_1", checkpoint_prefix="/b/raw/ab/x_n0_1/_flytecheckpoints",
        prev_checkpoint_prefix="/b/raw/cd/x_n0_0/_flytecheckpoints", unique_key="x_n0_1", namespace="p-d",
        task_template_path=lambda: calls.append("tt") or "/b/n0/data/task.pb",
        inputs=lambda: literal_map({"n": 3, "name": "ada", "f": 2.0, "ok": True}),
    )
    base.update(kw)
    return TemplateParams(**base)


@pytest.mark.parametrize("arg, expected", [
    ("{{.input}}", "/b/n0/data/inputs.pb"),
    ("{{ .Input }}", "/b/n0/data/inputs.pb"),
    ("{{$input}}", "/b/n0/data/inputs.pb"),
    ("{{.inputPrefix}}", "/b/n0/data"),
    ("{{.outputPrefix}}", "/b/n0/data/1"),
    ("{{.OUTPUTPREFIX}}", "/b/n0/data/1"),
    ("{{.rawOutputDataPrefix}}", "/b/raw/ab/x_n0_1"),
    ("{{.checkpointOutputPrefix}}", "/b/raw/ab/x_n0_1/_flytecheckpoints"),
    ("{{.prevCheckpointPrefix}}", "/b/raw/cd/x_n0_0/_flytecheckpoints"),
    ("{{.perRetryUniqueKey}}", "x_n0_1"),
    ("{{.namespace}}", "p-d"),
    ("{{.taskTemplatePath}}", "/b/n0/data/task.pb"),
    ("--out={{.outputPrefix}}/x", "--out=/b/n0/data/1/x"),
    ("{{.Inputs.n}}-{{ .inputs.name }}", "3-ada"),
    ("{{.Inputs.f}} {{.Inputs.ok}}", "2 true"),
    ("{{.unknown}}", "{{.unknown}}"),
    ("plain", "plain"),
])
def test_render(arg, expected):
    assert render([arg], params()) == [expected]


def test_prev_checkpoint_is_empty_on_the_first_attempt():
    assert render(["--prev-checkpoint", "{{.prevCheckpointPrefix}}"], params(prev_checkpoint_prefix="")) == [
        "--prev-checkpoint", ""]


def test_task_template_is_written_only_when_mentioned():
    calls.clear()
    render(["{{.input}}", "{{.outputPrefix}}"], params())
    assert calls == []
    render(["{{.TaskTemplatePath}}"], params())
    assert calls == ["tt"]


def test_a_missing_input_is_an_error_naming_it():
    with pytest.raises(TemplateError, match="'nope'"):
        render(["{{.Inputs.nope}}"], params())


def test_collections_and_blobs_render_as_flyte_does():
    blob = literals_pb2.Literal(scalar=literals_pb2.Scalar(blob=literals_pb2.Blob(uri="s3://b/f")))
    coll = literal([1, 2, 3])
    p = params(inputs=lambda: literals_pb2.LiteralMap(literals={"f": blob, "xs": coll}))
    assert render(["{{.Inputs.f}}", "{{.Inputs.xs}}"], p) == ["s3://b/f", "[1,2,3]"]
