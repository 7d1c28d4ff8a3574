"""flytekit's own cost of a map task's items, without flytelite: the floor under the map_task row.

Run as `python -m benchmarks.map_floor ITEMS [PROCESSES]` (real_tasks.py runs it in a process of its own):
prints the seconds `pyflyte-map-execute` of benchmarks/workflows/real_wfs.py's `real_step` took for ITEMS
items, each given the whole ITEMS-long input list and its index, as a map task's item is. The items are
split over PROCESSES processes (default: one per core) forked from this one after it imported flytekit;
each runs its items one after another through flytekit's entrypoint, in-process: no server, no zygote, no
folder, log or environment of an item's own. What every flytelite item gets anyway is kept: a fresh
import of the task's module; flytekit's contexts and registries put back between items and the input list
parsed into flytekit's models once per process (both with flytelite's worker code); sys.path put back
between items (as flytelite's workers do).
Every item's output is read back and checked.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from flyteidl.core import literals_pb2
from flytekit.bin import entrypoint
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.core.array_node_map_task import map_task
from flytekit.models import literals as literal_models

from benchmarks.common import integers
from flytelite.plugins.local.workers import child

WORKFLOWS = Path(__file__).parent / "workflows"
MODULE = "real_wfs"
INDEX_VARIABLE = "FLYTE_K8S_ARRAY_INDEX"


def _template() -> list[str]:
    """The map task's container command, with its templates."""
    import real_wfs

    settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
    return map_task(real_wfs.real_step).get_command(settings)


def _command(template: list[str], folder: str, index: int) -> list[str]:
    """The command with its templates filled in for item `index` (in `folder`)."""
    values = {"{{.input}}": f"{folder}/inputs.pb", "{{.outputPrefix}}": f"{folder}/out/{index}",
              "{{.rawOutputDataPrefix}}": f"{folder}/raw/{index}",
              "{{.checkpointOutputPrefix}}": f"{folder}/checkpoint/{index}", "{{.prevCheckpointPrefix}}": ""}
    command = []
    for arg in template:
        for name, value in values.items():
            arg = arg.replace(name, value)
        command.append(arg)
    return command


def _run_items(folder: str, indices: range) -> None:
    """In a forked process: each item through flytekit's entrypoint, then what the item left undone as a
    flytelite worker undoes it (its module, sys.path, flytekit's contexts and registries): the next item
    imports the module afresh."""
    child._remember_large_input_maps()
    # flytekit makes a sandbox folder per item in the temp folder: in `folder`, deleted with it.
    tempfile.tempdir = os.path.join(folder, "tmp")
    os.makedirs(tempfile.tempdir, exist_ok=True)
    template = _template()
    sys.modules.pop(MODULE, None)
    baseline = child._Baseline()
    path = list(sys.path)  # flytekit's entrypoint adds to it on every item
    os.environ["BATCH_JOB_ARRAY_INDEX_VAR_NAME"] = INDEX_VARIABLE
    for index in indices:
        os.environ[INDEX_VARIABLE] = str(index)
        try:
            entrypoint._pass_through.main(args=_command(template, folder, index), prog_name="pyflyte",
                                          standalone_mode=False)
        except SystemExit as e:
            if e.code:
                raise
        baseline.restore()
        sys.path[:] = path


def measure(items: int, processes: int) -> float:
    """Seconds for `items` items over `processes` forked processes; raises if an item's output is wrong."""
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(WORKFLOWS / f"{MODULE}.py", folder)
        sys.path.insert(0, folder)
        inputs = literals_pb2.LiteralMap(literals={"x": integers(list(range(items)))})
        Path(folder, "inputs.pb").write_bytes(inputs.SerializeToString())
        started = time.perf_counter()
        pids = []
        for k in range(processes):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    _run_items(folder, range(k, items, processes))
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        seconds = time.perf_counter() - started
        if any(codes):
            raise RuntimeError(f"pyflyte-map-execute processes exited with {codes}")
        for index in range(items):
            proto = literals_pb2.LiteralMap()
            proto.ParseFromString(Path(folder, "out", str(index), "outputs.pb").read_bytes())
            value = literal_models.LiteralMap.from_flyte_idl(proto).literals["o0"].scalar.primitive.integer
            if value != index + 1:
                raise RuntimeError(f"item {index} gave {value}, not {index + 1}")
        return seconds


if __name__ == "__main__":
    count = int(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count() or 1
    print(f"{measure(count, workers):.6f}")
