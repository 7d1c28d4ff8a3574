"""A warm worker's own code (plugins/local/workers/child.py), tested in-process.

Its clean-up between attempts while another thread imports: flytekit's event loop thread lives on between
attempts, and an attempt's end is reported before its clean-up runs, so a clean-up that fails there loses
the next attempt handed to the worker (seen in flytekit's remote suite). And what it keeps between a map
task's items: the list of inputs they all read; between attempts of a code version: its unpacked tarball and
its compiled modules."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import io
import os
import sys
import tarfile
from pathlib import Path

from flyteidl.core import literals_pb2
from flytekit.core import utils
from flytekit.models import literals

from flytelite.plugins.local.workers import child


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


def test_a_map_items_list_of_inputs_is_parsed_once_per_worker(monkeypatch, tmp_path):
    """Every item of a map task reads the whole list from its inputs file, as flytekit's entrypoint does; a
    list of 300 integers (~2.6 kB) took ~1 ms of each item to parse again."""
    monkeypatch.setattr(literals.LiteralMap, "from_flyte_idl", literals.LiteralMap.__dict__["from_flyte_idl"])
    monkeypatch.setattr(utils, "load_proto_from_file", utils.load_proto_from_file)
    child._remember_large_input_maps()

    def read(inputs: literals_pb2.LiteralMap, name: str) -> literals.LiteralMap:
        path = tmp_path / name
        path.write_bytes(inputs.SerializeToString())
        return literals.LiteralMap.from_flyte_idl(utils.load_proto_from_file(literals_pb2.LiteralMap, str(path)))

    first = read(_integers(300), "item-0.pb")
    assert read(_integers(300), "item-1.pb") is first  # the next item's file: the same list
    other = read(_integers(301), "item-2.pb")
    assert other is not first and len(other.literals["x"].collection.literals) == 301
    assert [v.scalar.primitive.integer for v in other.literals["x"].collection.literals] == list(range(301))
    # A task's few scalar inputs are parsed each time, and a map parsed from elsewhere is never taken for it.
    assert read(_integers(1), "task-0.pb") is not read(_integers(1), "task-1.pb")
    assert literals.LiteralMap.from_flyte_idl(_integers(301)) is not other
    # Other protos are read as flytekit reads them.
    assert utils.load_proto_from_file(literals_pb2.LiteralMap, str(tmp_path / "item-2.pb")) == _integers(301)


TASK_MODULE = """
def outer():
    def inner():
        raise ValueError("from the task")
    return inner


class Step:
    def run(self):
        return [n for n in range(3)]
"""


def _import_from(folder: Path, source: str):
    folder.mkdir()
    path = folder / "task_module.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"task_module_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_items_fresh_import_of_the_same_source_is_compiled_once_per_worker(monkeypatch, tmp_path):
    """Each item imports the task's modules from a folder of its own: compiled once per worker, the same code
    objects given to each later import with that import's file name (tracebacks and inspect read the item's
    own file), and no bytecode written into the later items' folders."""
    loader = importlib.machinery.SourceFileLoader
    monkeypatch.setattr(loader, "get_code", loader.get_code)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compiled = []
    source_to_code = loader.source_to_code
    monkeypatch.setattr(loader, "source_to_code",
                        lambda self, data, path, **kw: compiled.append(path) or source_to_code(self, data, path, **kw))
    child._remember_compiled_code()

    first = _import_from(tmp_path / "item-0", TASK_MODULE)
    assert len(compiled) == 1 and (tmp_path / "item-0" / "__pycache__").is_dir()  # the first import: as usual
    second = _import_from(tmp_path / "item-1", TASK_MODULE)
    assert len(compiled) == 1 and not (tmp_path / "item-1" / "__pycache__").exists()
    own = str(tmp_path / "item-1" / "task_module.py")
    inner = second.outer()
    assert {second.outer.__code__.co_filename, inner.__code__.co_filename,
            second.Step.run.__code__.co_filename} == {own}
    assert first.outer.__code__.co_filename == str(tmp_path / "item-0" / "task_module.py")
    assert inspect.getsource(second.Step.run).strip().startswith("def run(self):") and second.Step().run() == [0, 1, 2]
    try:
        inner()
    except ValueError as e:
        assert e.__traceback__.tb_next.tb_frame.f_code.co_filename == own
    # Another source is compiled from its own text.
    third = _import_from(tmp_path / "item-2", TASK_MODULE.replace("range(3)", "range(4)"))
    assert len(compiled) == 2 and third.Step().run() == [0, 1, 2, 3]
    # Installed modules load as the interpreter loads them.
    assert loader("json.decoder", importlib.util.find_spec("json.decoder").origin).get_code("json.decoder")
    assert len(compiled) == 2


def test_an_attempts_environment_is_exactly_its_own(monkeypatch):
    monkeypatch.setattr(os, "environ", os.environ.copy())  # a plain dict: the test's own process is untouched
    os.environ.clear()
    os.environ.update({"KEPT": "1", "CHANGED": "by the last item", "SET_BY_THE_LAST_ITEM": "x"})
    child._set_environment({"KEPT": "1", "CHANGED": "as the attempt says", "NEW": "2"})
    assert dict(os.environ) == {"KEPT": "1", "CHANGED": "as the attempt says", "NEW": "2"}


def _tarball(entries: list[tuple[str, bytes | str | None, int]]) -> bytes:
    """A gzipped tarball of (name, file content / link target / None for a folder, mode)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for i, (name, what, mode) in enumerate(entries):
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = mode, 1_700_000_000 + 1000 * i
            if what is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif isinstance(what, str):
                info.type, info.linkname = tarfile.SYMTYPE, what
                archive.addfile(info)
            else:
                info.size = len(what)
                archive.addfile(info, io.BytesIO(what))
    return out.getvalue()


def _tree(root: Path) -> dict[str, tuple]:
    """Every path under root (root included) with its mode, mtime and content or link target."""
    tree = {}
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        what = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        tree[str(path.relative_to(root))] = (oct(st.st_mode), st.st_mtime_ns, what)
    return tree


def _extracted_by_tarfile(data: bytes, dest: Path) -> dict[str, tuple]:
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        archive.extractall(dest, filter="data")
    return _tree(dest)


def test_a_kept_code_tarball_unpacks_as_tarfile_unpacks_it(tmp_path):
    data = _tarball([(".", None, 0o755), ("pkg", None, 0o750), ("pkg/deep", None, 0o777),
                     ("pkg/__init__.py", b"", 0o644), ("pkg/deep/wf.py", b"x = 1\n", 0o600),
                     ("run.sh", b"#!/bin/sh\n", 0o4755), ("late/file.txt", b"a folder not listed", 0o644)])
    members = child.plain_members(data, str(tmp_path / "first"))
    assert members is not None and len(members) == 7
    for attempt in ("first", "second"):  # a worker's attempts each unpack it into their own folder
        (tmp_path / attempt).mkdir()
        child.unpack(members, str(tmp_path / attempt))
    expected = _extracted_by_tarfile(data, tmp_path / "tarfile")
    assert expected["pkg/deep/wf.py"][2] == b"x = 1\n" and expected["run.sh"][0] == oct(0o100755)
    for attempt in ("first", "second"):
        got = _tree(tmp_path / attempt)
        # A folder the tarball does not list is made when it is unpacked: its time is then, not the tarball's.
        assert got.pop("late")[::2] == expected["late"][::2]
        assert got == {name: value for name, value in expected.items() if name != "late"}


def test_a_code_tarball_with_links_or_refused_members_is_left_to_tarfile(tmp_path):
    link = _tarball([("wf.py", b"", 0o644), ("alias.py", "wf.py", 0o777)])
    assert child.plain_members(link, str(tmp_path)) is None
    outside = _tarball([("../escape.py", b"", 0o644)])
    assert child.plain_members(outside, str(tmp_path)) is None
    assert child.plain_members(b"not a tarball", str(tmp_path)) is None
