"""Task types besides @task end to end: ShellTask, raw ContainerTask, @eager."""

import asyncio

from flytekit import ContainerTask, eager, kwtypes, task, workflow
from flytekit.extras.tasks.shell import OutputLocation, ShellTask
from flytekit.types.file import FlyteFile

# The image the test server's config maps to "local" (see tests/e2e/test_failure_and_types.py).
LOCAL_IMAGE = "localhost/flytelite-test/shell:1"


@task
def types_read(f: FlyteFile) -> str:
    with open(f) as fh:
        return fh.read().strip()


# -- ShellTask (a python-task: flytekit runs the script) ---------------------------------------
types_shell = ShellTask(
    name="types_shell",
    debug=True,
    script="""
    set -e
    echo "shell says {inputs.greeting}" > {outputs.out}
    """,
    inputs=kwtypes(greeting=str),
    output_locs=[OutputLocation(var="out", var_type=FlyteFile, location="{inputs.greeting}.txt")],
)


@workflow
def types_shell_wf(greeting: str) -> str:
    return types_read(f=types_shell(greeting=greeting))


# -- raw ContainerTask --------------------------------------------------------------------------
types_add = ContainerTask(
    name="types_add",
    image=LOCAL_IMAGE,
    input_data_dir="/var/inputs",
    output_data_dir="/var/outputs",
    inputs=kwtypes(a=int, b=float, name=str, doc=FlyteFile),
    outputs=kwtypes(total=float, greeting=str, report=FlyteFile),
    command=[
        "sh", "-c",
        "awk 'BEGIN {print {{.inputs.a}} + {{.inputs.b}}}' > /var/outputs/total"
        " && echo \"hello $(cat /var/inputs/name)\" > /var/outputs/greeting"
        " && cp /var/inputs/doc /var/outputs/report && echo 'seen by the container' >> /var/outputs/report",
    ],
)


@workflow
def types_container_wf(a: int, b: float, name: str, doc: FlyteFile) -> tuple[float, str, str]:
    total, greeting, report = types_add(a=a, b=b, name=name, doc=doc)
    return total, greeting, types_read(f=report)


types_unmapped = ContainerTask(
    name="types_unmapped",
    image="ghcr.io/flytelite-test/not-mapped:1",
    inputs=kwtypes(a=int),
    outputs=kwtypes(b=int),
    command=["sh", "-c", "echo {{.inputs.a}} > /var/outputs/b"],
)


@workflow
def types_unmapped_wf(a: int) -> int:
    return types_unmapped(a=a)


# -- @eager ---------------------------------------------------------------------------------------
@task
def types_double(x: int) -> int:
    return 2 * x


@task
async def types_triple(x: int) -> int:
    return 3 * x


@eager
async def types_eager(x: int) -> int:
    # Each call becomes an execution of its own on the server; async tasks run concurrently.
    a = types_double(x=x)
    b, c = await asyncio.gather(types_triple(x=a), types_triple(x=a + 1))
    return a + b + c


@task
def types_reject(x: int) -> int:
    if x > 0:
        raise ValueError(f"types_reject does not take {x}")
    return x


@eager
async def types_eager_fails(x: int) -> int:
    return types_reject(x=types_double(x=x))
