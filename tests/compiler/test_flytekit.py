"""Workflows serialized by the pinned flytekit compile: attribute paths, enums, optionals, unions,
dataclasses, branches (with subworkflow and launch-plan arms), map tasks, gates, failure nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

import pytest
from flyteidl.admin import launch_plan_pb2

from flytelite.compiler import CompileError, compile_task, compile_workflow, get_requirements

flytekit = pytest.importorskip("flytekit")

from flytekit import (  # noqa: E402
    LaunchPlan,
    approve,
    conditional,
    dynamic,
    map_task,
    sleep,
    task,
    wait_for_input,
    workflow,
)
from flytekit.configuration import Image, ImageConfig, SerializationSettings  # noqa: E402
from flytekit.models import task as task_models  # noqa: E402
from flytekit.models.admin.workflow import WorkflowSpec  # noqa: E402
from flytekit.models.launch_plan import LaunchPlan as LaunchPlanModel  # noqa: E402
from flytekit.tools.translator import get_serializable  # noqa: E402
from flytekit.types.error import FlyteError  # noqa: E402


class Color(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Inner:
    a: int
    b: str


@dataclass
class Outer:
    inner: Inner
    xs: list[int]


@dataclass
class Child(Inner):
    c: float | None = None


@task
def make(n: int) -> Outer:
    return Outer(inner=Inner(a=n, b="x"), xs=[n])


@task
def make_child(n: int) -> Child:
    return Child(a=n, b="b")


@task
def take_outer(o: Outer) -> int:
    return o.inner.a


@task
def take_inner(i: Inner) -> int:
    return i.a


@task
def use_int(a: int) -> int:
    return a


@task
def use_str(b: str) -> str:
    return b


@task
def use_color(c: Color) -> str:
    return c.value


@task
def opt(x: int | None = None, y: int | str = 1) -> int | None:
    return x


@task
def sq(x: int) -> int:
    return x * x


@workflow
def sub(n: int) -> int:
    return sq(x=n)


sub_lp = LaunchPlan.get_or_create(sub, name="flytelite_test_sub_lp", default_inputs={"n": 3})


@task
def cleanup(n: int, c: Color, xs: list[int], err: FlyteError | None = None) -> None:
    pass


@workflow(on_failure=cleanup)
def big(n: int, c: Color = Color.RED, xs: list[int] = [1, 2]) -> tuple[int, str, int, int]:  # noqa: B006
    o = make(n=n)
    a = use_int(a=o.inner.a)
    b = use_str(b=o.inner.b)
    use_int(a=o.xs[0])
    take_outer(o=o)
    take_inner(i=make_child(n=n))
    use_color(c=c)
    opt()
    opt(x=a, y="s")
    r = conditional("c1").if_(n > 3).then(sq(x=n)).elif_(n < 0).then(use_int(a=n)).else_().fail("negative")
    r2 = conditional("c2").if_((n > 3) & (n < 10)).then(sub(n=n)).else_().then(sub_lp(n=n))
    map_task(sq)(x=xs)
    sleep(timedelta(seconds=1))
    v = approve(a, "approve-a", timeout=timedelta(hours=1))
    w = wait_for_input("number", timeout=timedelta(hours=1), expected_type=int)
    use_int(a=w)
    return use_int(a=v), b, r, use_int(a=r2)


@dynamic
def dyn(n: int) -> int:
    return sq(x=n)


@workflow
def with_dynamic(n: int) -> int:
    return dyn(n=n)


def _serialize(entity):
    settings = SerializationSettings(
        image_config=ImageConfig(default_image=Image(name="default", fqn="img", tag="t")),
        project="p",
        domain="d",
        version="v",
    )
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, entity)
    tasks, workflows, plans = [], [], []
    for model in entities.values():
        if isinstance(model, task_models.TaskSpec):
            tasks.append(compile_task(model.template.to_flyte_idl()))
        elif isinstance(model, WorkflowSpec):
            workflows.append(model.to_flyte_idl())
        elif isinstance(model, LaunchPlanModel):
            plans.append(model)
    return tasks, workflows, plans


def _admin_launch_plan(model, workflows) -> launch_plan_pb2.LaunchPlan:
    # What admin stores: the spec plus the closure's expected inputs/outputs.
    lp = launch_plan_pb2.LaunchPlan(id=model.id.to_flyte_idl(), spec=model.spec.to_flyte_idl())
    lp.closure.expected_inputs.CopyFrom(lp.spec.default_inputs)
    target = next(w for w in workflows if w.template.id.name == lp.spec.workflow_id.name)
    lp.closure.expected_outputs.CopyFrom(target.template.interface.outputs)
    return lp


@pytest.mark.parametrize("entity", [big, with_dynamic], ids=["big", "with_dynamic"])
def test_flytekit_workflow_compiles(entity) -> None:
    tasks, workflows, plans = _serialize(entity)
    spec = next(w for w in workflows if w.template.id.name == entity.name)
    subs = list(spec.sub_workflows)
    by_name = {t.template.id.name: t for t in tasks}
    reqs = get_requirements(spec.template, subs)
    closure = compile_workflow(
        spec.template, subs, [by_name[i.name] for i in reqs.task_ids], [_admin_launch_plan(p, workflows) for p in plans]
    )
    assert closure.primary.template.nodes[0].id == "start-node"
    assert len(closure.sub_workflows) == len(subs)


def test_flytekit_workflow_without_launch_plan_fails() -> None:
    tasks, workflows, _ = _serialize(big)
    spec = next(w for w in workflows if w.template.id.name == big.name)
    with pytest.raises(CompileError) as exc:
        compile_workflow(spec.template, list(spec.sub_workflows), tasks, [])
    assert exc.value.codes == ["WorkflowReferenceNotFound"]
    assert "flytelite_test_sub_lp" in str(exc.value)
