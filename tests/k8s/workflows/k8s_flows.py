"""Workflows the Kubernetes end-to-end tests run as pods: retries, a memory limit, a timeout, a log."""

import os
import sys
import time
from datetime import timedelta
from pathlib import Path

from flytekit import ContainerTask, Resources, dynamic, kwtypes, map_task, task, workflow
from flytekit.exceptions.user import FlyteRecoverableException
from flytekit.types.file import FlyteFile


@task
def where() -> str:
    print("hello from a pod", flush=True)
    return f"{os.environ.get('HOSTNAME', '')}|{os.environ.get('FLYTE_INTERNAL_EXECUTION_ID', '')}"


@workflow
def where_wf() -> str:
    return where()


@task
def k8s_square(x: int) -> int:
    return x * x


@task
def k8s_sum(xs: list[int]) -> int:
    return sum(xs)


@workflow
def k8s_map_wf(xs: list[int]) -> int:
    return k8s_sum(xs=map_task(k8s_square, concurrency=2)(x=xs))


@task
def k8s_inc(x: int) -> int:
    return x + 1


@workflow
def k8s_diamond_wf(x: int) -> int:
    top = k8s_inc(x=x)
    return k8s_sum(xs=[k8s_square(x=top), k8s_inc(x=top)])


@dynamic
def k8s_fan(n: int) -> list[int]:
    return [k8s_square(x=i) for i in range(n)]


@workflow
def k8s_dynamic_wf(n: int) -> int:
    return k8s_sum(xs=k8s_fan(n=n))


@task(retries=2)
def k8s_flaky() -> int:
    attempt = int(os.environ.get("FLYTE_ATTEMPT_NUMBER", "0"))
    if attempt < 1:
        raise FlyteRecoverableException(f"attempt {attempt} fails on purpose")
    return attempt


@workflow
def k8s_flaky_wf() -> int:
    return k8s_flaky()


@task(limits=Resources(mem="64Mi"), requests=Resources(mem="64Mi"))
def k8s_hog() -> int:
    blocks = [bytearray(16 * 1024 * 1024) for _ in range(32)]  # 512 MiB against a 64 MiB limit
    return len(blocks)


@workflow
def k8s_hog_wf() -> int:
    return k8s_hog()


@task(timeout=timedelta(seconds=3))
def k8s_sleepy(seconds: int) -> int:
    time.sleep(seconds)
    return seconds


@workflow
def k8s_sleepy_wf(seconds: int) -> int:
    return k8s_sleepy(seconds=seconds)


@task
def k8s_slow(marker_dir: str, seconds: int) -> int:
    Path(marker_dir).mkdir(parents=True, exist_ok=True)
    Path(marker_dir, f"slow-{os.getpid()}-{os.environ.get('HOSTNAME', '')}").touch()
    for i in range(seconds * 10):
        print(f"tick {i}", file=sys.stdout, flush=True)
        time.sleep(0.1)
    return seconds


@workflow
def k8s_slow_wf(marker_dir: str, seconds: int) -> int:
    return k8s_slow(marker_dir=marker_dir, seconds=seconds)


@workflow
def k8s_wide_map_wf(xs: list[int]) -> int:
    return k8s_sum(xs=map_task(k8s_square)(x=xs))


# -- raw containers: inputs and outputs as files, through the pod's helpers ----------------------------
k8s_raw_files = ContainerTask(
    name="k8s_raw_files",
    image="localhost/flytelite-test/shell:1",
    inputs=kwtypes(a=int, name=str, doc=FlyteFile),
    outputs=kwtypes(total=int, greeting=str, report=FlyteFile),
    command=["sh", "-c", "echo $(( {{.inputs.a}} + 40 )) > /var/outputs/total"
                         " && echo \"hello $(cat /var/inputs/name)\" > /var/outputs/greeting"
                         " && cp /var/inputs/doc /var/outputs/report && echo 'seen by the container' >> /var/outputs/report"],
)


@task
def k8s_read(f: FlyteFile) -> str:
    with open(f) as fh:
        return fh.read().strip()


@workflow
def k8s_raw_files_wf(a: int, name: str, doc: FlyteFile) -> tuple[int, str, str]:
    total, greeting, report = k8s_raw_files(a=a, name=name, doc=doc)
    return total, greeting, k8s_read(f=report)


k8s_raw_checks = ContainerTask(
    name="k8s_raw_checks",
    image="localhost/flytelite-test/shell:1",
    inputs=kwtypes(n=int),
    outputs=kwtypes(half=int),
    command=["sh", "-c", "if [ {{.inputs.n}} -lt 0 ]; then exit 3; fi; "
                         "if [ $(( {{.inputs.n}} % 2 )) -eq 1 ]; then echo 'odd numbers have no half' > /var/outputs/_ERROR; "
                         "elif [ {{.inputs.n}} -gt 0 ]; then echo $(( {{.inputs.n}} / 2 )) > /var/outputs/half; fi"],
)


@workflow
def k8s_raw_wf(n: int) -> int:
    return k8s_raw_checks(n=n)
