"""A task module that registers a type transformer for an installed type when imported (fractions.Fraction):
importing it twice in one process fails, so a warm worker must not run a second item after it."""

from __future__ import annotations

import functools
import os
from fractions import Fraction

from flytekit import map_task, task, workflow
from flytekit.core.type_engine import TypeEngine, TypeTransformer
from flytekit.models.literals import Literal, Primitive, Scalar
from flytekit.models.types import LiteralType, SimpleType


class FractionTransformer(TypeTransformer[Fraction]):
    def __init__(self) -> None:
        super().__init__("fraction", Fraction)

    def get_literal_type(self, t) -> LiteralType:
        return LiteralType(simple=SimpleType.STRING)

    def to_literal(self, ctx, python_val, python_type, expected) -> Literal:
        return Literal(scalar=Scalar(primitive=Primitive(string_value=str(python_val))))

    def to_python_value(self, ctx, lv, expected_python_type):
        return Fraction(lv.scalar.primitive.string_value)


TypeEngine.register(FractionTransformer())  # raises if this module is imported twice in one process


@task
def third(x: int, pids_dir: str) -> Fraction:
    with open(os.path.join(pids_dir, "pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    return Fraction(x, 3)


@workflow
def thirds_wf(xs: list[int], pids_dir: str) -> list[Fraction]:
    return map_task(functools.partial(third, pids_dir=pids_dir), concurrency=1)(x=xs)
