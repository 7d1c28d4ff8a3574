"""Files and folders as defaults `pyflyte run --remote` uploads, as task outputs and as inputs of a
downstream task (the shape of flytekit's generic_idl_flytetypes.py, without pandas)."""

import os
from dataclasses import dataclass

from flytekit import task, workflow
from flytekit.types.directory import FlyteDirectory
from flytekit.types.file import FlyteFile

HERE = os.path.dirname(os.path.realpath(__file__))


@dataclass
class Bundle:
    ff: FlyteFile
    fd: FlyteDirectory


# Local paths as defaults: `pyflyte run --remote` uploads them and the workflow's default becomes a blob URI.
DEFAULT = Bundle(ff=FlyteFile(os.path.join(HERE, "blob_data", "a.txt")), fd=FlyteDirectory(os.path.join(HERE, "blob_data")))


@task
def bt_read(b: Bundle = DEFAULT) -> Bundle:
    with open(b.ff) as f:
        first = f.read()
    names = sorted(os.listdir(b.fd.download()))
    out_dir = os.path.join(os.getcwd(), "made")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(f"{first.strip()}|{','.join(names)}")
    out_file = os.path.join(os.getcwd(), "copy.txt")
    with open(out_file, "w") as f:
        f.write(first.upper())
    return Bundle(ff=FlyteFile(out_file), fd=FlyteDirectory(out_dir))


@task
def bt_check(b: Bundle) -> str:
    with open(os.path.join(b.fd.download(), "summary.txt")) as f:
        summary = f.read()
    with open(b.ff) as f:
        return f"{summary}|{f.read()}"


@workflow
def blob_types_wf(b: Bundle = DEFAULT) -> str:
    return bt_check(b=bt_read(b=b))
