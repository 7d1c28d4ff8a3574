"""The program of a raw-container pod's helpers (plugins/kubernetes/copilot_main.py), outside a pod: laying
inputs out from a real blob store, and telling the task's processes from the helper's own in a process
table (a folder shaped like /proc, whose root links point at two "containers")."""

from __future__ import annotations

import json
import os

from flyteidl.core import literals_pb2

from flytelite.plugins.kubernetes import copilot_main
from flytelite.storage import BlobStore


def test_download_lays_the_inputs_out_as_files(tmp_path):
    blobs = BlobStore(str(tmp_path / "store"))
    inputs = literals_pb2.LiteralMap()
    inputs.literals["n"].scalar.primitive.integer = 7
    inputs.literals["name"].scalar.primitive.string_value = "pod"
    uri = f"{blobs.root}/in/inputs.pb"
    blobs.write_proto(uri, inputs)
    assert copilot_main.main(["download", "--store", blobs.root, "--inputs", uri, "--to",
                              str(tmp_path / "in"), "--format", "json"]) == 0
    assert (tmp_path / "in" / "n").read_text() == "7" and (tmp_path / "in" / "name").read_text() == "pod"
    assert json.loads((tmp_path / "in" / "inputs.json").read_text()) == {"n": 7, "name": "pod"}


def test_the_task_is_what_other_containers_started_after_the_hook(tmp_path):
    proc = tmp_path / "proc"
    helper, task = tmp_path / "helper-root", tmp_path / "task-root"
    helper.mkdir()
    task.mkdir()
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "ns_last_pid").write_text("21\n")
    os.symlink(helper, proc / "self")  # proc/self/root is then helper/root
    os.symlink(".", helper / "root")
    for pid, root in [(1, tmp_path), (7, helper), (12, helper), (13, task), (20, task), (21, helper)]:
        (proc / str(pid)).mkdir()
        os.symlink(root, proc / str(pid) / "root")
    assert copilot_main.last_pid(str(proc)) == 21
    assert copilot_main.others_after(12, str(proc)) == [13, 20]  # not the helper's own processes, nor pid 1
    assert copilot_main.others_after(20, str(proc)) == []
