"""flytelite's OCI images (scripts/image/build.sh, docs/image.md): a second build from a fresh root filesystem
gives the same digests, skopeo reads the archives (what pushing them to a registry takes), and the server and
the task helpers run from the layer.

`make test-deploy` runs it after `make image`; `make test` leaves it out (a root filesystem takes minutes to
build). It needs root (chroot) and Debian's mmdebstrap; the skopeo test also Debian's skopeo.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import IO

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
BUILD = CHECKOUT / "scripts" / "image" / "build.sh"
VERSION = version("flytelite")
SERVER, TASK = f"flytelite-{VERSION}.tar", f"flytelite-flytekit-{VERSION}.tar"
VENV_PATH = "PATH=/opt/flytelite/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

pytestmark = [
    pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap is missing (Debian's mmdebstrap)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the images are checked with chroot, which needs root"),
    # A root filesystem's build (Debian's packages and the venv) takes one to three minutes.
    pytest.mark.timeout(1200),
]


def _build(out: Path, *options: str) -> None:
    env = {**os.environ, "BUILD_PYTHON": sys.executable}
    run = subprocess.run([str(BUILD), "--out", str(out), *options], env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"build.sh {' '.join(options)} failed:\n{run.stdout}\n{run.stderr}"


def _read(archive: tarfile.TarFile, name: str | tarfile.TarInfo) -> IO[bytes]:
    stream = archive.extractfile(name)
    assert stream is not None, name
    return stream


def manifest_digest(path: Path) -> str:
    with tarfile.open(path) as archive:
        return json.load(_read(archive, "index.json"))["manifests"][0]["digest"]


@contextmanager
def layer_blob(path: Path) -> Iterator[IO[bytes]]:
    """The tar of an image archive's only layer."""
    def blob(digest: str) -> IO[bytes]:
        return _read(archive, "blobs/sha256/" + digest.partition(":")[2])

    with tarfile.open(path) as archive:
        manifest = json.load(blob(json.load(_read(archive, "index.json"))["manifests"][0]["digest"]))
        yield blob(manifest["layers"][0]["digest"])


def describe_layer(path: Path) -> dict[str, tuple]:
    """Each file of the layer as (type, mode, owner, mtime, link, content hash): what a digest is made of."""
    files: dict[str, tuple] = {}
    with layer_blob(path) as blob, tarfile.open(fileobj=blob, mode="r|") as layer:
        for member in layer:
            content = layer.extractfile(member) if member.isreg() else None
            files[member.name] = (member.type, oct(member.mode), member.uid, member.gid, member.mtime,
                                  member.linkname, content and hashlib.sha256(content.read()).hexdigest())
    return files


def debian_packages(path: Path) -> set[str]:
    """The Debian packages in the image, with their versions (dpkg's status file)."""
    with layer_blob(path) as blob, tarfile.open(fileobj=blob, mode="r|") as layer:
        for member in layer:
            if member.name == "var/lib/dpkg/status":
                stanzas = _read(layer, member).read().decode().split("\n\n")
                return {" ".join(line for line in stanza.splitlines() if line.startswith(("Package:", "Version:")))
                        for stanza in stanzas if stanza.strip()}
    raise AssertionError(f"{path} has no var/lib/dpkg/status")


@pytest.fixture(scope="module")
def builds() -> Iterator[tuple[Path, Path]]:
    """Two builds: from the cached root filesystem (the one `make image` used) and from a fresh one."""
    with tempfile.TemporaryDirectory(prefix="flytelite-images-") as folder:
        cached, fresh = Path(folder, "cached"), Path(folder, "fresh")
        _build(cached)
        _build(fresh, "--fresh-rootfs")
        if manifest_digest(cached / SERVER) != manifest_digest(fresh / SERVER) and \
                debian_packages(cached / SERVER) != debian_packages(fresh / SERVER):
            # Debian's archive has newer packages than when the cached root filesystem was built: two fresh
            # builds from the same archive are what must agree.
            cached = Path(folder, "fresh-again")
            _build(cached, "--fresh-rootfs")
        yield cached, fresh


@pytest.mark.parametrize("image", [SERVER, TASK])
def test_a_fresh_root_filesystem_gives_the_same_digest(builds, image):
    first, second = (folder / image for folder in builds)
    if manifest_digest(first) != manifest_digest(second):
        one, other = describe_layer(first), describe_layer(second)
        differing = sorted(name for name in one.keys() | other.keys() if one.get(name) != other.get(name))
        details = "\n".join(f"  {name}: {one.get(name)} / {other.get(name)}" for name in differing[:30])
        pytest.fail(f"{image}: {manifest_digest(first)} then {manifest_digest(second)}; "
                    f"{len(differing)} files differ:\n{details or '  none: the configs differ'}")


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo is missing (Debian's skopeo)")
@pytest.mark.parametrize(("image", "entrypoint", "cmd"), [(SERVER, ["flytelite"], ["start", "--host", "0.0.0.0"]), (TASK, None, None)])
def test_skopeo_reads_the_archive(builds, image, entrypoint, cmd):
    archive = builds[1] / image

    def inspect(*options: str) -> dict:
        run = subprocess.run(["skopeo", "inspect", *options, f"oci-archive:{archive}"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    assert inspect()["Digest"] == manifest_digest(archive)
    config = inspect("--config")["config"]
    assert config.get("Entrypoint") == entrypoint
    assert config.get("Cmd") == cmd
    assert config["Env"] == [VENV_PATH, "LANG=C.UTF-8"]
    assert config["WorkingDir"] == "/root"


@pytest.fixture(scope="module")
def unpacked(builds) -> Iterator[Path]:
    """The image's layer unpacked (as root: owners kept) into a folder to chroot into."""
    with tempfile.TemporaryDirectory(prefix="flytelite-rootfs-") as folder, layer_blob(builds[1] / SERVER) as blob:
        untar = subprocess.Popen(["tar", "-x", "-C", folder], stdin=subprocess.PIPE)
        assert untar.stdin is not None
        shutil.copyfileobj(blob, untar.stdin, 1 << 20)
        untar.stdin.close()
        assert untar.wait() == 0
        yield Path(folder)


def in_image(root: Path, *command: str) -> subprocess.CompletedProcess:
    """Run a command in the unpacked image with the image's environment, found through its PATH as a
    container's entrypoint is."""
    return subprocess.run(["chroot", str(root), "/usr/bin/env", "-i", VENV_PATH, "LANG=C.UTF-8", "HOME=/root",
                           *command], capture_output=True, text=True, timeout=120)


def test_the_server_runs_from_the_image(unpacked):
    run = in_image(unpacked, "flytelite", "--help")
    assert run.returncode == 0 and "start" in run.stdout, run.stderr
    # The package's data (the schema's migrations) is there: a new SQLite home gets the whole schema.
    run = in_image(unpacked, "flytelite", "db", "upgrade", "--home", "/tmp/home")
    assert run.returncode == 0 and "schema at revision" in run.stdout, run.stderr


def test_the_task_helpers_run_from_the_image(unpacked):
    run = in_image(unpacked, "python", "-c", "import flytekit, flytelite.plugins.kubernetes.copilot_main")
    assert run.returncode == 0, run.stderr
    for script in ("pyflyte-execute", "pyflyte-fast-execute"):
        run = in_image(unpacked, script, "--help")
        assert run.returncode == 0, f"{script}: {run.stderr}"
