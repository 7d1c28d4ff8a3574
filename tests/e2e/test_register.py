"""`pyflyte register` and FlyteRemote against a real flytelite server process."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest
from flytekit.exceptions.user import FlyteEntityNotExistException
from flytekit.models.core.identifier import Identifier, ResourceType

from tests.e2e.flyte_cli import pyflyte

pytestmark = pytest.mark.e2e

FLOWS = '''
from flytekit import LaunchPlan, task, workflow


@task(retries={retries})
def add_one(x: int) -> int:
    return x + 1


@workflow
def adder(x: int = 1) -> int:
    return add_one(x=add_one(x=x))


adder_fixed = LaunchPlan.get_or_create(adder, name="{package}_adder_fixed", fixed_inputs={{"x": 10}})
'''


def write_package(root: Path, package: str, retries: int = 0) -> Path:
    """A project folder (no __init__.py) holding one package, as pyflyte register expects."""
    pkg = root / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "flows.py").write_text(textwrap.dedent(FLOWS.format(retries=retries, package=package)))
    return root


def register(server, root: Path, package: str, version: str, *extra: str, check: bool = True):
    return pyflyte(server, "register", "--version", version, *extra, package, cwd=root, check=check)


def test_register_refetch_and_activate(server, remote, tmp_path):
    package = f"reg_{uuid.uuid4().hex[:8]}"
    root = write_package(tmp_path / "proj", package)
    register(server, root, package, "v1", "--copy", "none")
    # Registering the same thing again is fine.
    register(server, root, package, "v1", "--copy", "none")

    task = remote.fetch_task(name=f"{package}.flows.add_one", version="v1")
    assert list(task.interface.inputs) == ["x"]
    wf = remote.fetch_workflow(name=f"{package}.flows.adder")
    assert wf.id.version == "v1" and [n.id for n in wf.nodes] == ["n0", "n1"]
    fixed = remote.fetch_launch_plan(name=f"{package}_adder_fixed", version="v1")
    assert fixed.fixed_inputs.literals["x"].scalar.primitive.integer == 10

    assert remote.fetch_active_launchplan(name=f"{package}.flows.adder") is None
    remote.activate_launchplan(Identifier(ResourceType.LAUNCH_PLAN, "flytesnacks", "development",
                                          f"{package}.flows.adder", "v1"))
    assert remote.fetch_active_launchplan(name=f"{package}.flows.adder").id.version == "v1"
    # --activate-launchplans moves the active version to the new one.
    register(server, root, package, "v2", "--copy", "none", "--activate-launchplans")
    assert remote.fetch_active_launchplan(name=f"{package}.flows.adder").id.version == "v2"


def test_changed_task_under_same_version_is_refused(server, tmp_path):
    package = f"reg_{uuid.uuid4().hex[:8]}"
    root = write_package(tmp_path / "proj", package)
    register(server, root, package, "v1", "--copy", "none")
    # Without fast registration the code lives in the image; change what the template says.
    write_package(root, package, retries=2)
    proc = register(server, root, package, "v1", "--copy", "none", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "different content" in output and "new version" in output


def test_bad_and_unknown_ids(server, remote, tmp_path):
    package = f"reg_{uuid.uuid4().hex[:8]}"
    root = write_package(tmp_path / "proj", package)
    proc = register(server, root, package, "v1", "--copy", "none", "--domain", "qa", check=False)
    assert proc.returncode != 0 and "development, staging, production" in proc.stdout + proc.stderr
    proc = register(server, root, package, "v1", "--copy", "none", "--project", "no-such-project", check=False)
    assert proc.returncode != 0 and "no-such-project" in proc.stdout + proc.stderr
    with pytest.raises(FlyteEntityNotExistException):
        remote.fetch_task(name=f"{package}.flows.add_one")
    with pytest.raises(FlyteEntityNotExistException):
        remote.fetch_workflow(name=f"{package}.flows.adder", version="v1")


def test_fast_register(server, remote, tmp_path):
    """The default `pyflyte register`: upload the code tarball (DataProxyService), then register."""
    package = f"reg_{uuid.uuid4().hex[:8]}"
    root = write_package(tmp_path / "proj", package)
    register(server, root, package, "fast1")
    task = remote.fetch_task(name=f"{package}.flows.add_one", version="fast1")
    args = list(task.template.container.args)
    assert "pyflyte-fast-execute" in args
    tarball = args[args.index("--additional-distribution") + 1]
    assert Path(tarball).exists(), tarball
