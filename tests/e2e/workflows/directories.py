"""FlyteDirectory inputs and outputs of several shapes: a task lists a directory's files with their contents,
and another makes directories of one file, of nested folders, and of names with spaces."""

import os

from flytekit import task, workflow
from flytekit.types.directory import FlyteDirectory


@task
def listing(d: FlyteDirectory) -> str:
    d.download()
    found = []
    for root, _, files in os.walk(d.path):
        for name in files:
            path = os.path.join(root, name)
            with open(path) as f:
                found.append(f"{os.path.relpath(path, d.path)}={f.read().strip()}")
    return ",".join(sorted(found))


@workflow
def list_wf(d: FlyteDirectory) -> str:
    return listing(d=d)


@task
def make(shape: str) -> FlyteDirectory:
    folder = os.path.join(os.getcwd(), "made", shape)
    files = {"one": {"x.txt": "hi"}, "nested": {"a/b/deep.txt": "n", "top.txt": "t"},
             "spaces": {"sub dir/a file.txt": "s"}}[shape]
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return FlyteDirectory(folder)


@workflow
def made_wf(shape: str) -> tuple[FlyteDirectory, str]:
    d = make(shape=shape)
    return d, listing(d=d)
