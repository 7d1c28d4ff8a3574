"""Workflows for a server whose blob store is S3: every blob the tasks read and write lives in the bucket."""

import os

import pandas as pd
from flytekit import Deck, map_task, task, workflow
from flytekit.types.directory import FlyteDirectory
from flytekit.types.file import FlyteFile
from flytekit.types.structured import StructuredDataset


@task
def s3_hello(name: str) -> str:
    return f"hello {name}"


@workflow
def s3_hello_wf(name: str) -> str:
    return s3_hello(name=name)


@task
def s3_make(text: str) -> tuple[FlyteFile, FlyteDirectory, StructuredDataset]:
    out_file = os.path.join(os.getcwd(), "made.txt")
    with open(out_file, "w") as f:
        f.write(text.upper())
    out_dir = os.path.join(os.getcwd(), "folder")
    os.makedirs(out_dir, exist_ok=True)
    for name in ("one.txt", "two.txt"):
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(name)
    frame = pd.DataFrame({"word": text.split(), "length": [len(w) for w in text.split()]})
    return FlyteFile(out_file), FlyteDirectory(out_dir), StructuredDataset(dataframe=frame)


@task
def s3_read(ff: FlyteFile, fd: FlyteDirectory, sd: StructuredDataset, given: FlyteFile) -> str:
    with open(ff) as f:
        made = f.read()
    names = ",".join(sorted(os.listdir(fd.download())))
    total = int(sd.open(pd.DataFrame).all()["length"].sum())
    with open(given) as f:
        uploaded = f.read().strip()
    return f"{made}|{names}|{total}|{uploaded}|{ff.remote_source or ff.path}"


@workflow
def s3_blobs_wf(text: str, given: FlyteFile) -> tuple[str, FlyteFile, FlyteDirectory, StructuredDataset]:
    ff, fd, sd = s3_make(text=text)
    return s3_read(ff=ff, fd=fd, sd=sd, given=given), ff, fd, sd


@task
def s3_square(x: int) -> int:
    return x * x


@task
def s3_total(values: list[int]) -> int:
    return sum(values)


@workflow
def s3_map_wf(xs: list[int]) -> tuple[list[int], int]:
    squares = map_task(s3_square)(x=xs)
    return squares, s3_total(values=squares)


@task(enable_deck=True)
def s3_deck(x: int) -> int:
    Deck("s3 deck", f"<p>deck of {x} in the bucket</p>")
    return x + 1


@workflow
def s3_deck_wf(x: int) -> int:
    return s3_deck(x=x)
