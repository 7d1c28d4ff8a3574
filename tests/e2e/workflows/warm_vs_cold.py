"""Workflows run on a warm-worker server and on a cold one; their results must be the same."""

import os

from flytekit import task, workflow
from flytekit.exceptions.user import FlyteRecoverableException
from flytekit.types.file import FlyteFile

CODE_VERSION = "one"


@task
def wvc_step(x: int) -> int:
    return x + 1


@task
def wvc_write(text: str) -> FlyteFile:
    path = os.path.join(os.getcwd(), "note.txt")
    with open(path, "w") as f:
        f.write(text)
    return FlyteFile(path)


@task
def wvc_read(f: FlyteFile) -> str:
    with open(f) as fh:
        return fh.read().upper()


@task(retries=2)
def wvc_flaky(x: int) -> int:
    attempt = int(os.environ["FLYTE_ATTEMPT_NUMBER"])
    if attempt < 1:
        raise FlyteRecoverableException(f"flaky on attempt {attempt}")
    return x * 100 + attempt


@task
def wvc_grpc(endpoint: str) -> str:
    """gRPC from inside the task (what eager tasks do): FlyteRemote reads this very execution."""
    from flytekit.configuration import Config
    from flytekit.remote import FlyteRemote

    remote = FlyteRemote(Config.for_endpoint(endpoint, insecure=True), default_project="flytesnacks",
                         default_domain="development")
    execution = remote.fetch_execution(name=os.environ["FLYTE_INTERNAL_EXECUTION_ID"])
    return f"{execution.id.name == os.environ['FLYTE_INTERNAL_EXECUTION_ID']}:{execution.closure.phase}"


@task
def wvc_version() -> str:
    return CODE_VERSION


@workflow
def wvc_main(endpoint: str, text: str = "warm") -> tuple[int, str, int, str, str]:
    x = wvc_step(x=0)
    for _ in range(4):
        x = wvc_step(x=x)
    return x, wvc_read(f=wvc_write(text=text)), wvc_flaky(x=x), wvc_grpc(endpoint=endpoint), wvc_version()


@task
def wvc_fail(x: int) -> int:
    if x > 0:
        raise ValueError(f"wvc: x={x} is not welcome")
    return x


@workflow
def wvc_fail_wf(x: int = 7) -> int:
    return wvc_fail(x=x)


@workflow
def wvc_chain20(x: int = 0) -> int:
    for _ in range(20):
        x = wvc_step(x=x)
    return x


@task
def wvc_parent() -> str:
    """What started this task's process: the zygote (warm) or pyflyte-fast-execute (cold)."""
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        cmdline = f.read().replace(b"\0", b" ").decode()
    return "zygote" if "zygote.py" in cmdline else "fast-execute" if "pyflyte-fast-execute" in cmdline else cmdline


@workflow
def wvc_version_wf() -> tuple[str, str]:
    return wvc_version(), wvc_parent()
