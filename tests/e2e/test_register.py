"""`pyflyte register` and FlyteRemote against a real flytelite server process."""

from __future__ import annotations

import importlib
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from flyteidl.admin import workflow_pb2
from flytekit.clients.raw import RawSynchronousFlyteClient
from flytekit.exceptions.user import FlyteEntityNotExistException, FlyteInvalidInputException
from flytekit.models.core.identifier import Identifier, ResourceType

from flytelite.storage.blobstore import local_path
from tests.admin.harness import reorder_upstreams, spec_of
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


# Nodes with two upstream nodes inside branch arms, a nested branch and a subworkflow: flytekit lists
# them from a Python set, so each process may write them in another order.
BRANCHY = '''
from flytekit import conditional, task, workflow


@task
def bump(x: int) -> int:
    return x + 1


@task
def add(a: int, b: int) -> int:
    return a + b


@workflow
def pair_sum(a: int, b: int) -> int:
    return add(a=bump(x=a), b=bump(x=b))


@workflow
def branchy(x: int = 1, outer: bool = True, inner: bool = True) -> int:
    a, b = bump(x=x), bump(x=x)
    return (
        conditional("outer")
        .if_(outer.is_true())
        .then(conditional("inner").if_(inner.is_true()).then(add(a=a, b=b)).else_().then(add(a=b, b=a)))
        .else_()
        .then(pair_sum(a=a, b=b))
    )
'''


def write_package(root: Path, package: str, retries: int = 0, flows: str | None = None) -> Path:
    """A project folder (no __init__.py) holding one package, as pyflyte register expects."""
    pkg = root / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    source = flows if flows is not None else FLOWS.format(retries=retries, package=package)
    (pkg / "flows.py").write_text(textwrap.dedent(source))
    return root


def import_flows(root: Path, package: str):
    """The package's flows module in this process, under the name pyflyte register gave its entities."""
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(f"{package}.flows")
    finally:
        sys.path.remove(str(root))


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
    # A local store hands out local:// URIs: remote to flytekit, a file on this machine.
    assert tarball.startswith("local:///") and Path(local_path(tarball)).exists(), tarball


def test_reregistration_ignores_upstream_order(server, remote, tmp_path):
    """Re-running the same program re-registers cleanly though flytekit orders upstream nodes differently
    in each process; a real change under the same version is still refused."""
    package = f"reg_{uuid.uuid4().hex[:8]}"
    root = write_package(tmp_path / "proj", package, flows=BRANCHY)
    register(server, root, package, "v1", "--copy", "none")

    def create(spec: workflow_pb2.WorkflowSpec) -> None:
        # The raw client sends the protobuf as it is (flytekit's models would drop empty task overrides).
        RawSynchronousFlyteClient.create_workflow(
            remote.client, workflow_pb2.WorkflowCreateRequest(id=spec.template.id, spec=spec))

    ours = spec_of(import_flows(root, package).branchy, "v1")
    # Both orders of every two-element upstream list: at least one is not the order pyflyte sent.
    for descending in (False, True):
        create(reorder_upstreams(ours, descending))
    wf = remote.fetch_workflow(name=f"{package}.flows.branchy", version="v1")
    assert [n.id for n in wf.nodes] == ["n0", "n1", "n2"]

    changed = reorder_upstreams(ours, descending=True)
    nested_arm = changed.template.nodes[2].branch_node.if_else.case.then_node.branch_node.if_else.case.then_node
    nested_arm.metadata.retries.retries = 3
    with pytest.raises(FlyteInvalidInputException) as info:
        create(changed)
    assert "different content" in str(info.value.__cause__.details())
