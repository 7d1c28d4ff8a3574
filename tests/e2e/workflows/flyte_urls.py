"""A task whose first attempt fails (recoverably) and whose second squares its input and renders a deck."""

import os

import flytekit
from flytekit import task, workflow
from flytekit.exceptions.user import FlyteRecoverableException


@task(enable_deck=True, retries=1)
def square(x: int) -> int:
    if os.environ.get("FLYTE_ATTEMPT_NUMBER", "0") == "0":
        raise FlyteRecoverableException("the first attempt fails on purpose")
    flytekit.Deck("numbers", f"<p>{x} squared is {x * x}</p>")
    return x * x


@workflow
def square_wf(x: int) -> int:
    return square(x=x)
