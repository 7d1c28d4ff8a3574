"""The program of a raw-container pod's helpers (FlytePropeller's co-pilot, flytecopilot's `download` and
`sidecar` commands), run in the pod by `python -m flytelite.plugins.kubernetes.copilot_main`:

    download  the init container: lays the attempt's inputs out in the input volume (plugins/machinery/copilot.py).
    upload    the first container: waits for the task's container to start and to end, then reads its
              outputs from the output volume and writes outputs.pb, or error.pb saying what is wrong.
    ready     the upload container's postStart hook: returns once `upload` watches, so the kubelet (which
              starts a pod's containers in order, each after the previous one's hook) cannot start the
              task's container before `upload` can see it.

The pod shares one process namespace, where `upload` sees the task's processes (see upload()).
"""

from __future__ import annotations

import argparse
import base64
import os
import posixpath
import sys
import time
from pathlib import Path

from flyteidl.core import errors_pb2, execution_pb2, interface_pb2, literals_pb2, tasks_pb2

from flytelite.idl import error_codes as E
from flytelite.plugins.machinery import copilot
from flytelite.storage import BlobStore
from flytelite.storage.s3 import config_from_task_environment

FORMATS = {"json": tasks_pb2.DataLoadingConfig.JSON, "yaml": tasks_pb2.DataLoadingConfig.YAML,
           "proto": tasks_pb2.DataLoadingConfig.PROTO}
# How often `upload` looks at the processes, and for how many looks in a row the task's must be gone.
POLL_SECONDS = 0.05
GONE_LOOKS = 2


def _store(root: str) -> BlobStore:
    return BlobStore(root, config_from_task_environment(os.environ))


def download(args: argparse.Namespace) -> int:
    blobs = _store(args.store)
    inputs = blobs.read_proto_if_exists(args.inputs, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
    copilot.write_inputs(blobs, inputs, Path(args.to), FORMATS[args.format])
    return 0


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:  # gone, or not ours to look into
        return None
    return st.st_dev, st.st_ino


def last_pid(proc: str = "/proc") -> int:
    """The pid the pod's process namespace gave out last."""
    return int(Path(proc, "sys/kernel/ns_last_pid").read_text())


def others_after(baseline: int, proc: str = "/proc") -> list[int]:
    """Processes of other containers (another root folder than this one's) started after `baseline`."""
    own_root = _identity(f"{proc}/self/root")
    found = []
    for entry in os.listdir(proc):
        if entry.isdigit() and int(entry) > baseline and _identity(f"{proc}/{entry}/root") != own_root:
            found.append(int(entry))
    return found


def _wait_for_file(path: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def upload(args: argparse.Namespace) -> int:
    """Wait for the task's container to start and end, then collect its outputs.

    The kubelet starts the task's container once this container's postStart hook (`ready`) returned,
    and the hook returns once this program watches, telling it the namespace's last pid: every pid given
    out after that belongs to the task's container (or to a container after it). A task that ends before
    a look still moved the last pid, so no start is missed; its end is when no process of another
    container younger than the hook's last pid is left."""
    Path(args.ready_file).write_text(str(os.getpid()))
    if not _wait_for_file(args.ready_file + ".hook", args.start_timeout):
        print(f"upload: the postStart hook did not answer within {args.start_timeout:.0f}s", file=sys.stderr)
        return 2
    baseline = int(Path(args.ready_file + ".hook").read_text())
    while last_pid() <= baseline:
        time.sleep(POLL_SECONDS)
    print("upload: the task's container started", flush=True)
    gone = 0
    while gone < GONE_LOOKS:
        gone = 0 if others_after(baseline) else gone + 1
        time.sleep(POLL_SECONDS)
    print("upload: the task's container ended; reading its outputs", flush=True)
    blobs = _store(args.store)
    outputs_var = interface_pb2.VariableMap()
    outputs_var.ParseFromString(base64.b64decode(args.interface))
    try:
        outputs = copilot.read_outputs(blobs, outputs_var, Path(args.from_dir), args.raw_output_prefix)
    except copilot.ContainerReportedError as e:
        _write_error(blobs, args.output_prefix, E.CONTAINER_ERROR, f"User Error: {e}")
    except (copilot.OutputError, OSError) as e:
        _write_error(blobs, args.output_prefix, E.OUTPUTS_NOT_FOUND, str(e))
    else:
        blobs.write_proto(posixpath.join(args.output_prefix, "outputs.pb"), outputs)
    return 0


def _write_error(blobs: BlobStore, prefix: str, code: str, message: str) -> None:
    """error.pb as flytekit writes it for a user's recoverable error."""
    print(f"upload: {code}: {message}", file=sys.stderr, flush=True)
    error = errors_pb2.ContainerError(code=code, message=message, kind=errors_pb2.ContainerError.RECOVERABLE,
                                      origin=execution_pb2.ExecutionError.USER)
    blobs.write_proto(posixpath.join(prefix, "error.pb"), errors_pb2.ErrorDocument(error=error))


def ready(args: argparse.Namespace) -> int:
    """The postStart hook: once `upload` watches, tell it the last pid before the task's container."""
    if not _wait_for_file(args.file, args.timeout):
        print(f"ready: {args.file} did not appear within {args.timeout:.0f}s", file=sys.stderr)
        return 1
    tmp = f"{args.file}.hook.tmp"
    Path(tmp).write_text(str(last_pid()))
    os.replace(tmp, args.file + ".hook")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="copilot_main", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("download")
    d.add_argument("--store", required=True, help="the blob store's root")
    d.add_argument("--inputs", required=True, help="the attempt's inputs.pb")
    d.add_argument("--to", required=True, help="the input folder")
    d.add_argument("--format", choices=sorted(FORMATS), default="json")
    d.set_defaults(run=download)
    u = commands.add_parser("upload")
    u.add_argument("--store", required=True)
    u.add_argument("--from-dir", required=True, help="the output folder")
    u.add_argument("--output-prefix", required=True)
    u.add_argument("--raw-output-prefix", required=True)
    u.add_argument("--interface", required=True, help="the outputs' VariableMap, serialized and base64-encoded")
    u.add_argument("--ready-file", required=True)
    u.add_argument("--start-timeout", type=float, default=120.0)
    u.set_defaults(run=upload)
    r = commands.add_parser("ready")
    r.add_argument("--file", required=True)
    r.add_argument("--timeout", type=float, default=120.0)
    r.set_defaults(run=ready)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
