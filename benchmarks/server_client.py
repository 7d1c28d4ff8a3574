"""A real flytelite server process for the benchmarks, and the client calls they time (pyflyte, raw gRPC)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import grpc
from flyteidl.admin import common_pb2, execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import execution_pb2 as core_execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc

from benchmarks.common import TMPFS, D, P
from benchmarks.noop_server import MODULE as NOOP_SERVER
from benchmarks.venvs import clean_env
from flytelite.testing import RunningServer, make_server

HERE = Path(__file__).parent
PYFLYTE = str(Path(sys.executable).parent / "pyflyte")
URL = re.compile(r"/executions/([a-z0-9]+)")
DONE = ("SUCCEEDED", "FAILED", "ABORTED", "TIMED_OUT")
SUCCEEDED = core_execution_pb2.WorkflowExecution.SUCCEEDED


class BenchServer:
    """`flytelite start` with a YAML config, the benchmark workflows copied beside it, a gRPC stub.

    `home` is a state folder shared with other replicas (default: one of its own in `folder`). `noop` runs
    the benchmarks' no-op server (benchmarks/noop_server.py): tasks are answered at once, not run.
    """

    def __init__(self, folder: Path, config: str = "", home: Path | None = None, noop: bool = False):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.server: RunningServer = make_server(folder, config, home=home)
        env = dict(os.environ)
        if folder.resolve().is_relative_to(TMPFS):
            # The attempts' temp folders (where flytekit makes its sandbox folders, about half of the files an
            # attempt creates) go with the rest of a home on tmpfs; on the disk they are in the run's temp folder.
            (folder / "tmp").mkdir(exist_ok=True)
            env["TMPDIR"] = str(folder / "tmp")
        if noop:
            self.server.module = NOOP_SERVER
            root = str(HERE.parent)  # where `benchmarks` is imported from, whatever the working directory
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        self.server.env = env
        self.workflows = folder / "wf"
        shutil.copytree(HERE / "workflows", self.workflows, ignore=shutil.ignore_patterns("__pycache__"))
        self.channel: grpc.Channel | None = None
        self.stub: admin_pb2_grpc.AdminServiceStub | None = None

    def __enter__(self) -> BenchServer:
        self.server.start()
        self.channel = grpc.insecure_channel(self.server.endpoint,
                                             options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        self.stub = admin_pb2_grpc.AdminServiceStub(self.channel)
        return self

    def __exit__(self, *exc) -> None:
        self.channel.close()
        self.server.stop()

    @property
    def pid(self) -> int:
        return self.server.proc.pid

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user and system, its threads')."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mib(self) -> float:
        """The server's peak resident memory (VmHWM) so far."""
        return self._memory_mib("VmHWM")

    def rss_mib(self) -> float:
        """The server's resident memory now (VmRSS)."""
        return self._memory_mib("VmRSS")

    def _memory_mib(self, field: str) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {field} in /proc/{self.pid}/status")

    # -- launching ----------------------------------------------------------------------------
    def pyflyte_run(self, file: str, workflow: str, *args: str, client: Path | None = None) -> str:
        """`pyflyte run --remote` (fast registration, then CreateExecution): the execution's name. `client` is
        the bin folder of another venv to run pyflyte from (see client_env), else flytelite's venv's."""
        out = subprocess.run([pyflyte(client), "--config", str(self.server.config_path), "run", "--remote", file,
                              workflow, *args], cwd=self.workflows, env=client_env(client, self.server.client_env()),
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"pyflyte run {workflow} failed:\n{out.stdout}\n{out.stderr}")
        return URL.search(out.stdout + out.stderr).group(1)

    def launch_plan_of(self, name: str) -> identifier_pb2.Identifier:
        return self.get(name).spec.launch_plan

    def create(self, lp_id: identifier_pb2.Identifier, inputs: dict[str, literals_pb2.Literal]) -> str:
        return self.stub.CreateExecution(execution_pb2.ExecutionCreateRequest(
            project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=lp_id),
            inputs=literals_pb2.LiteralMap(literals=inputs))).id.name

    # -- reading ------------------------------------------------------------------------------
    def get(self, name: str) -> execution_pb2.Execution:
        return self.stub.GetExecution(execution_pb2.WorkflowExecutionGetRequest(
            id=identifier_pb2.WorkflowExecutionIdentifier(project=P, domain=D, name=name)))

    def wait(self, name: str, timeout: float = 900, poll: float = 0.02) -> execution_pb2.Execution:
        """Poll until the execution is done; it must have SUCCEEDED."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            execution = self.get(name)
            phase = core_execution_pb2.WorkflowExecution.Phase.Name(execution.closure.phase)
            if phase in DONE:
                if execution.closure.phase != SUCCEEDED:
                    raise RuntimeError(f"execution {name} {phase}: {execution.closure.error.message}\n"
                                       f"server log: {self.server.log_path}")
                return execution
            time.sleep(poll)
        raise TimeoutError(f"execution {name} not done in {timeout} s")

    def unfinished(self) -> int:
        """How many executions are not done (0 or 1: enough to wait on)."""
        listed = self.stub.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=1,
            filters="value_not_in(phase,SUCCEEDED;FAILED;ABORTED;TIMED_OUT)"))
        return len(listed.executions)

    def failed(self) -> int:
        listed = self.stub.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10,
            filters="value_in(phase,FAILED;ABORTED;TIMED_OUT)"))
        return len(listed.executions)

    def executions(self) -> list[execution_pb2.Execution]:
        """Every execution of the benchmarks' project and domain."""
        found, token = [], ""
        while True:
            page = self.stub.ListExecutions(common_pb2.ResourceListRequest(
                id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=1000, token=token))
            found += page.executions
            if not (token := page.token):
                return found

    def nodes(self, name: str) -> list[node_execution_pb2.NodeExecution]:
        return list(self.stub.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(
            workflow_execution_id=identifier_pb2.WorkflowExecutionIdentifier(project=P, domain=D, name=name),
            limit=10_000)).node_executions)

    def task_attempts(self, node: node_execution_pb2.NodeExecution) -> list[task_execution_pb2.TaskExecution]:
        return list(self.stub.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
            node_execution_id=node.id, limit=100)).task_executions)


def seconds(ts) -> float:
    return ts.seconds + ts.nanos / 1e9


def execution_seconds(execution: execution_pb2.Execution) -> float:
    """Created to SUCCEEDED, by the server's clock (the last update of a finished execution is its end)."""
    return seconds(execution.closure.updated_at) - seconds(execution.closure.created_at)


def now() -> float:
    return datetime.now(timezone.utc).timestamp()


def pyflyte(client: Path | None) -> str:
    return str(client / "pyflyte") if client is not None else PYFLYTE


def client_env(client: Path | None, env: dict[str, str]) -> dict[str, str]:
    return env if client is None else clean_env(env)


def local_pyflyte_run(folder: Path, file: str, workflow: str, *args: str, client: Path | None = None) -> None:
    """`pyflyte run` without --remote (flytekit's local execution, in a process of its own) of a workflow file
    of benchmarks/workflows, copied into `folder`: what `pyflyte run --remote` is compared with."""
    if not folder.exists():
        shutil.copytree(HERE / "workflows", folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([pyflyte(client), "run", file, workflow, *args], cwd=folder,
                         env=client_env(client, dict(os.environ)), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"pyflyte run {workflow} (local) failed:\n{out.stdout}\n{out.stderr}")
