"""The wheel `pip install .` builds carries every module and data file of the source tree (data files only
when pyproject.toml's package-data names them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Read by flytelite at run time besides its modules.
DATA = ("console/static/", "store/migrations/")


def test_the_wheel_holds_every_module_and_data_file(tmp_path):
    # Built from a copy: a build/ folder left in the checkout would lend the wheel files its config leaves out.
    src = tmp_path / "src"
    shutil.copytree(REPO / "flytelite", src / "flytelite", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("flytelite-*.whl")
    packaged = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("flytelite/")}
    source = {p.relative_to(REPO).as_posix() for p in (REPO / "flytelite").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts
              and (p.suffix == ".py" or p.relative_to(REPO / "flytelite").as_posix().startswith(DATA))}
    assert source - packaged == set()
