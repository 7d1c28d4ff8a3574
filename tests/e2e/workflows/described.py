"""A task and a workflow with descriptions: a docstring, and flytekit's Documentation with a source link."""

from flytekit import task, workflow
from flytekit.models.documentation import Description, Documentation, SourceCode


@task(docs=Documentation(short_description="Doubles a number.", long_description=Description(
    value="Returns twice its input, for the description tests."),
    source_code=SourceCode(link="https://example.com/described.py")))
def double(x: int) -> int:
    return 2 * x


@workflow
def described_wf(x: int) -> int:
    """Runs double once.

    The long part of the workflow's docstring.
    """
    return double(x=x)
