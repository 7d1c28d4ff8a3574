"""A warm worker's own code (plugins/warm/child.py), tested in-process.

Its clean-up between attempts while another thread imports: flytekit's event loop thread lives on between
attempts, and an attempt's end is reported before its clean-up runs, so a clean-up that fails there loses
the next attempt handed to the worker (seen in flytekit's remote suite). And what it keeps between a map
task's items: the list of inputs they all read."""

from __future__ import annotations

import os
import sys

from flyteidl.core import literals_pb2
from flytekit.models import literals

from flytelite.propeller.plugins.warm import child


def test_forgetting_finders_survives_an_import_in_another_thread(monkeypatch, tmp_path):
    site = os.path.join(os.path.realpath(sys.prefix), "lib")  # inside the interpreter's installation
    cache = {str(tmp_path / "task-code"): None, site: None}
    monkeypatch.setattr(sys, "path_importer_cache", cache)
    installed = child._installed

    def stats_while_another_thread_imports(path):
        cache[str(tmp_path / f"imported-meanwhile-{len(cache)}")] = None  # what a concurrent import adds
        return installed(path)

    monkeypatch.setattr(child, "_installed", stats_while_another_thread_imports)
    child._forget_finders()
    assert str(tmp_path / "task-code") not in cache and site in cache


def _integers(count: int) -> literals_pb2.LiteralMap:
    values = [literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=i)))
              for i in range(count)]
    return literals_pb2.LiteralMap(literals={"x": literals_pb2.Literal(
        collection=literals_pb2.LiteralCollection(literals=values))})


def test_a_map_items_list_of_inputs_is_parsed_once_per_worker(monkeypatch):
    """Every item of a map task reads the whole list; a list of 300 integers (~2.6 kB) took ~1 ms of each item
    to parse again."""
    monkeypatch.setattr(literals.LiteralMap, "from_flyte_idl", literals.LiteralMap.__dict__["from_flyte_idl"])
    child._remember_large_input_maps()
    parse = literals.LiteralMap.from_flyte_idl
    first = parse(_integers(300))
    assert parse(_integers(300)) is first  # the next item's file: the same list
    other = parse(_integers(301))
    assert other is not first and len(other.literals["x"].collection.literals) == 301
    # A task's few scalar inputs are parsed each time.
    assert parse(_integers(1)) is not parse(_integers(1))


def test_an_attempts_environment_is_exactly_its_own(monkeypatch):
    monkeypatch.setattr(os, "environ", os.environ.copy())  # a plain dict: the test's own process is untouched
    os.environ.clear()
    os.environ.update({"KEPT": "1", "CHANGED": "by the last item", "SET_BY_THE_LAST_ITEM": "x"})
    child._set_environment({"KEPT": "1", "CHANGED": "as the attempt says", "NEW": "2"})
    assert dict(os.environ) == {"KEPT": "1", "CHANGED": "as the attempt says", "NEW": "2"}
