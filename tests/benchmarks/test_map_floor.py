"""The map task's floor (benchmarks/map_floor.py): flytekit's entrypoint runs every item, whose result is
checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks import map_floor

ROOT = Path(__file__).parent.parent.parent


def test_every_item_runs_through_flytekits_entrypoint_and_is_checked():
    out = subprocess.run([sys.executable, "-m", "benchmarks.map_floor", "12", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) > 0


def test_the_item_command_names_the_items_paths(tmp_path):
    sys.path.insert(0, str(map_floor.WORKFLOWS))
    try:
        command = map_floor._command(map_floor._template(), str(tmp_path), 7)
    finally:
        sys.path.remove(str(map_floor.WORKFLOWS))
        sys.modules.pop(map_floor.MODULE, None)  # its tasks are not left imported for the worker's next tests
    assert command[0] == "pyflyte-map-execute"
    assert command[command.index("--inputs") + 1] == f"{tmp_path}/inputs.pb"
    assert command[command.index("--output-prefix") + 1] == f"{tmp_path}/out/7"
    assert not any("{{" in arg for arg in command)

