"""Task environments of a test's own: a venv whose interpreter sees the server's packages (flytekit and the
rest) through a .pth file, and into which a test installs tiny packages with pip while a server runs."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TaskEnv:
    python: Path
    site_packages: Path


def make_task_env(folder: Path, without: tuple[str, ...] = ()) -> TaskEnv:
    """A venv in `folder` that sees the server's site-packages except the top-level names in `without`
    (through a folder of links, so that a package can be missing from the task environment only)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    python = folder / "venv" / "bin" / "python"
    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        check=True, capture_output=True, text=True).stdout.strip())
    server_packages = folder / "server-packages"
    server_packages.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        top = entry.name.split("-")[0].split(".")[0]
        if entry.suffix != ".pth" and top not in without:
            (server_packages / entry.name).symlink_to(entry)
    (site_packages / "_server_packages.pth").write_text(f"{server_packages}\n")
    return TaskEnv(python, site_packages)


def build_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel holding `files` (path in site-packages -> text): what `pip install` takes offline."""
    dist_info = f"{name}-{version}.dist-info"
    contents = {**files,
                f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: flytelite-tests\nRoot-Is-Purelib: true\n"
                                      "Tag: py3-none-any\n"}
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def pip_install(env: TaskEnv, *wheels: Path) -> None:
    """`pip install` into the task environment (the server's pip, run for the environment's interpreter)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(env.python), "--disable-pip-version-check",
                           "--no-input", "install", "--no-index", "--no-deps", *map(str, wheels)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"


def editable_wheel(folder: Path, module: str, value: str) -> Path:
    """A module installed as pip installs an editable one: a .pth file in site-packages that names its source
    folder. Only an interpreter started after the install has that folder on sys.path."""
    src = folder / "src"
    src.mkdir(parents=True)
    (src / f"{module}.py").write_text(f"VALUE = {value!r}\n")
    return build_wheel(folder / "dist", module, "0.0.1", {f"__editable__.{module}-0.0.1.pth": f"{src}\n"})


def fake_joblib_wheel(folder: Path) -> Path:
    """A stand-in for joblib, which flytekit imports lazily (`lazy_module`) when flytekit.core.local_cache is
    imported: in an interpreter that imported flytekit before joblib was installed, joblib stays missing."""
    return build_wheel(folder / "dist", "joblib", "0.0.1",
                       {"joblib/__init__.py": "def hash(obj):\n    return 'fake-joblib-hash'\n"})
