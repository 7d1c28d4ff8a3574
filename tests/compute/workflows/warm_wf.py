"""An ordinary task in an environment with flytekit's Spark, Ray, Dask and PyTorch plugins installed, which
flytekit loads at import (the Spark plugin's loads numpy, whose OpenBLAS starts threads)."""

import ctypes
import os
import sys

from flytekit import task, workflow


def _blas_threads() -> int:
    with open("/proc/self/maps") as maps:
        library = next(line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line)
    return ctypes.CDLL(library).scipy_openblas_get_num_threads64_()


@task
def where_am_i() -> str:
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = "zygote" if b"zygote.py" in f.read() else "cold"
    return f"{parent} numpy={'numpy' in sys.modules} blas={_blas_threads()} cpus={os.cpu_count()}"


@workflow
def warm_wf() -> str:
    return where_am_i()


@task
def pid(after: int) -> int:
    return os.getpid()


@workflow
def pid_chain() -> list[int]:
    """Six tasks one after another, each giving the process it ran in."""
    a = pid(after=0)
    b = pid(after=a)
    c = pid(after=b)
    d = pid(after=c)
    e = pid(after=d)
    f = pid(after=e)
    return [a, b, c, d, e, f]
