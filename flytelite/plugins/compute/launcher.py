"""Runs one task attempt on a compute engine started for it alone, as an operator brings a cluster up for a
Flyte task and tears it down after:

    <task's python> launcher.py '<spec as JSON>' -- <the task's command>

It runs with the task's interpreter, which has flytekit and the engine but not flytelite: standard library only,
but for the engine's own package where the launcher is part of the engine (a Ray worker node, torch's store).
Every engine it starts is told to listen on loopback only (LOOPBACK).
It starts the engine's processes (a Dask scheduler and its workers; a Ray head and its worker groups), each
logging to a file of its own; once the engine answers, it runs the task's command against it (Dask: with the
scheduler's address in DASK_SCHEDULER_ADDRESS; Ray: submitted as a Ray job, as KubeRay's RayJob submitter does;
PyTorch: once per replica, with the variables the training operator gives each); then it stops every process it
started and exits with the task's exit code. A spec with an `address` joins that cluster instead of starting one.

Should an engine process die while the task runs, the task is killed and the launcher exits with LOST, saying
which one in the task's log: the plugin reports that as a system error, as the operators report a lost
executor. The plugin started the launcher in a session of its own: stopping that session (abort, timeout)
stops everything in it, and every process here carries the attempt's marker in its environment, by which the
plugin sweeps what outlived the launcher.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

# The launcher's exit code when an engine process died while the task ran.
LOST = 75
# How long the engine may take to answer before the attempt fails: longer on fewer processors, where a Ray
# node's processes start slowly.
START_SECONDS = 90.0 * max(1.0, 4 / (os.cpu_count() or 1))
STOP_SECONDS = 10.0
# Where every engine started for an attempt listens: nothing but this machine needs to reach it.
LOOPBACK = "127.0.0.1"


class EngineFailed(RuntimeError):
    pass


def say(message: str) -> None:
    print(f"[flytelite] {message}", flush=True)


class Component:
    """One engine process, named as its log link names it, logging to a file of its own."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: dict[str, str]):
        self.name = name
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env)

    def exited(self) -> int | None:
        return self.proc.poll()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_until(ready, what: str, components: list[Component]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while not ready():
        for c in components:
            if c.exited() is not None:
                raise EngineFailed(f"the {c.name} exited with code {c.exited()} before {what}; see its log")
        if time.monotonic() > deadline:
            raise EngineFailed(f"{what} did not happen within {START_SECONDS:.0f} s")
        time.sleep(0.2)


class Engine:
    """Starts an engine's processes for one task and tells the task how to reach them."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.bin = os.path.dirname(sys.executable)
        self.components: list[Component] = []
        self.env = dict(os.environ)

    def log_path(self, name: str) -> str:
        return os.path.join(self.spec["log_dir"], f"{self.spec['log_prefix']}.{name}.log")

    def start(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv, self.log_path(name), self.env)
        self.components.append(component)
        return component

    def drop(self, component: Component) -> None:
        """Stop one process and forget it (it failed to start)."""
        self.components.remove(component)
        component.proc.kill()
        component.proc.wait()

    def up(self) -> None:
        raise NotImplementedError

    def lost(self) -> Component | None:
        """An engine process that exited (while the task runs, the engine has lost it)."""
        return next((c for c in self.components if c.exited() is not None), None)

    def run_task(self, argv: list[str]) -> int:
        """Run the task's command against the engine; its exit code (LOST if an engine process died first)."""
        task = subprocess.Popen(argv, env=self.env)
        try:
            while (code := task.poll()) is None:
                if (lost := self.lost()) is not None:
                    say(f"the {lost.name} exited with code {lost.exited()} while the task ran; see its log")
                    return LOST
                time.sleep(0.5)
            return code
        finally:
            if task.poll() is None:
                task.kill()
                task.wait()

    def stop(self) -> None:
        for c in self.components:
            if c.exited() is None:
                c.proc.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for c in self.components:
            try:
                c.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                c.proc.kill()
                c.proc.wait()


class Dask(Engine):
    def up(self) -> None:
        address = self.spec.get("address")
        if not address:
            scheduler_file = os.path.join(self.spec["tmp"], "dask-scheduler.json")
            self.start("scheduler", [os.path.join(self.bin, "dask"), "scheduler", "--host", LOOPBACK,
                                     "--port", "0", "--dashboard-address", f"{LOOPBACK}:0",
                                     "--scheduler-file", scheduler_file])
            wait_until(lambda: _address(scheduler_file), "the Dask scheduler started", self.components)
            address = _address(scheduler_file)
            for i in range(self.spec["workers"]):
                self.start(f"worker-{i}", [os.path.join(self.bin, "dask"), "worker", address, "--name",
                                           f"worker-{i}", "--nthreads", str(self.spec["nthreads"]),
                                           "--memory-limit", self.spec["memory_limit"], "--host", LOOPBACK,
                                           # Without a dashboard a worker still serves /metrics and /health.
                                           "--no-dashboard", "--dashboard-address", f"{LOOPBACK}:0"])
        say(f"Dask scheduler at {address}")
        self.env["DASK_SCHEDULER_ADDRESS"] = address


def _address(scheduler_file: str) -> str:
    try:
        return json.loads(Path(scheduler_file).read_text()).get("address", "")
    except (OSError, ValueError):
        return ""


class Ray(Engine):
    """A Ray head and its worker groups' nodes, every socket of theirs on loopback and every call to them with the
    attempt's own token (Ray's token authentication).

    Ray keeps a node on 127.0.0.1 only with multi-node clusters off (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, the
    switch Ray reads on Windows and macOS): otherwise it replaces a loopback node address with the machine's, and
    its GCS, raylets and agents listen on every interface. Every process of the cluster gets the switch off, the
    job's driver included; worker nodes start through `ray_worker_node`, since with the switch off `ray start`
    starts only a head."""

    def up(self) -> None:
        address = self.spec.get("address")
        if address:
            self.dashboard = address if "://" in address else f"http://{address}"
            # A cluster of the configuration's own: its token, if the server has one, as Ray's clients read it.
            self.token = os.environ.get("RAY_AUTH_TOKEN", "")
        else:
            self.token = secrets.token_hex(32)
            # The metrics ports of the head's autoscaler and dashboard default to fixed numbers, which the
            # clusters of attempts running at once would share.
            self.env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token,
                             "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "AUTOSCALER_METRIC_PORT": str(free_port()),
                             "DASHBOARD_METRIC_PORT": str(free_port())})
            self.own_cluster()
        say(f"Ray dashboard at {self.dashboard}")

    def own_cluster(self) -> None:
        port, dashboard_port = free_port(), free_port()
        head = {"port": str(port), "dashboard-port": str(dashboard_port), "dashboard-host": LOOPBACK,
                "ray-client-server-port": str(free_port()), "node-ip-address": LOOPBACK,
                "include-dashboard": "true", "temp-dir": self.spec["ray_tmp"], "disable-usage-stats": "",
                **_own_ports(), **self.spec["head"]}
        self.start("head", [os.path.join(self.bin, "ray"), "start", "--head", "--block", *_flags(head)])
        self.dashboard = f"http://{LOOPBACK}:{dashboard_port}"
        wait_until(lambda: self.alive_nodes() >= 1, "the Ray head answered", self.components)
        # One node at a time, each retried once: nodes starting together on a small machine outlast the 30 s
        # Ray gives a raylet to register, and the job is submitted once every node joined, as KubeRay submits it
        # to a ready cluster.
        for group in self.spec["groups"]:
            for i in range(group["replicas"]):
                params = {"address": f"{LOOPBACK}:{port}", "node-ip-address": LOOPBACK, "disable-usage-stats": "",
                          **_own_ports(), **group["params"]}
                self.join(f"{group['name']}-{i}", [sys.executable, __file__, "--ray-node", *_flags(params)])

    def join(self, name: str, argv: list[str]) -> None:
        expected = len(self.components) + 1
        for attempt in (1, 2):
            node = self.start(name, argv)
            try:
                wait_until(lambda: self.alive_nodes() >= expected, f"the Ray node {name} joined", self.components)
                return
            except EngineFailed as e:
                lost = self.lost()
                if attempt == 2 or lost not in (None, node):
                    raise
                say(f"{e}; starting it again")
                self.drop(node)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def alive_nodes(self) -> int:
        """The cluster's live nodes, from the dashboard's state API (0 while it does not answer)."""
        nodes = _get(f"{self.dashboard}/api/v0/nodes", self.headers()).get("data", {}).get("result", {}) \
            .get("result", [])
        return sum(1 for node in nodes if node.get("state") == "ALIVE")

    def run_task(self, argv: list[str]) -> int:
        """Submit the task as a Ray job through the head's job API and follow it, printing its log, as the RayJob's
        submitter does: the entrypoint is the task's command as a shell line, with the task's runtime environment.
        A job still running when the launcher stops (abort) is stopped."""
        job = f"{self.dashboard}/api/jobs/{self.spec['submission_id']}"
        runtime_env = dict(self.spec.get("runtime_env") or {})
        # The job's driver runs where the cluster puts it: it gets the attempt's Flyte variables through its
        # runtime environment (the task's own env_vars win).
        runtime_env["env_vars"] = {**self.spec.get("job_env", {}), **runtime_env.get("env_vars", {})}
        # In the attempt's folder (a driver starts where the cluster's head runs): the task unpacks its code there.
        entrypoint = f"cd {shlex.quote(os.getcwd())} && exec {shlex.join(argv)}"
        body = {"entrypoint": entrypoint, "submission_id": self.spec["submission_id"],
                "runtime_env": runtime_env}
        headers = self.headers()
        # A head whose job agent has not registered yet answers "No available agent": try again.
        wait_until(lambda: _post(f"{self.dashboard}/api/jobs/", body, headers), "the Ray job was accepted",
                   self.components)
        printed, status = 0, ""
        try:
            while status not in ("SUCCEEDED", "FAILED", "STOPPED"):
                time.sleep(1)
                status = _get(job, headers).get("status", "")
                logs = _get(f"{job}/logs", headers).get("logs", "")
                print(logs[printed:], end="", flush=True)
                printed = len(logs)
                if (lost := self.lost()) is not None:
                    say(f"the {lost.name} exited with code {lost.exited()} while the job ran; see its log")
                    return LOST
        finally:
            if status not in ("SUCCEEDED", "FAILED", "STOPPED"):
                _post(f"{job}/stop", {}, headers)
        say(f"Ray job {self.spec['submission_id']} {status.lower()}: {_get(job, headers).get('message', '')}")
        return 0 if status == "SUCCEEDED" else 1


def ray_worker_node(flags: list[str]) -> None:
    """`ray start <flags>` for a worker node of an attempt's own cluster, whose processes have multi-node clusters
    off (see Ray): on for this process's own check of them, and its loopback addresses kept as given."""
    from ray._private import ray_constants, services
    from ray.scripts.scripts import main as ray_main

    ray_constants.ENABLE_RAY_CLUSTER = True
    services.resolve_ip_for_localhost = lambda host: host
    sys.argv = ["ray", "start", "--block", *flags]
    ray_main()


def _get(url: str, headers: dict[str, str]) -> dict:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as answer:
            return json.load(answer)
    except (OSError, ValueError):
        return {}


def _post(url: str, body: dict, headers: dict[str, str]) -> bool:
    """POST JSON; whether it was accepted."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status == 200
    except OSError:
        return False


class PyTorch(Engine):
    """A PyTorchJob's replicas as processes of this machine, each in a folder of its own (a fast-registered task
    unpacks its code where it starts); rank 0 writes to the task's log, the others to logs of their own."""

    def up(self) -> None:
        # The store the replicas meet at is the launcher's, on loopback: torch's own listens on every interface.
        # Replicas that find it hosted join it (c10d rendezvous), or are told to (TORCHELASTIC_USE_AGENT_STORE).
        listener = socket.socket()
        listener.bind((LOOPBACK, 0))
        listener.listen(128)
        port = listener.getsockname()[1]
        self.store = _tcp_store(listener, port)
        if self.spec["elastic"]:
            # FLYTELITE_LOOPBACK: the store each node's elastic agent opens for its workers on loopback too
            # (plugins/machinery/task_site/sitecustomize.py).
            self.env.update({"PET_RDZV_ENDPOINT": f"{LOOPBACK}:{port}", "PET_RDZV_BACKEND": "c10d",
                             "PET_NNODES": f"{self.spec['min_nodes']}:{self.spec['replicas']}",
                             "FLYTELITE_LOOPBACK": LOOPBACK})
        else:
            self.env.update({"MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(port), "TORCHELASTIC_USE_AGENT_STORE": "True",
                             "WORLD_SIZE": str(self.spec["replicas"])})
        # Gloo's and TensorPipe's own connections on the loopback interface, unless the task says otherwise.
        for variable in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            self.env.setdefault(variable, "lo")

    def run_task(self, argv: list[str]) -> int:
        replicas: list[subprocess.Popen] = []
        try:
            for rank in range(self.spec["replicas"]):
                env = {**self.env, "RANK": str(rank)} if not self.spec["elastic"] else self.env
                if rank == 0:
                    replicas.append(subprocess.Popen(argv, env=env))
                    continue
                cwd = os.path.join(os.getcwd(), f"replica-{rank}")
                os.makedirs(cwd, exist_ok=True)
                with open(self.log_path(f"worker-{rank - 1}" if not self.spec["elastic"] else f"node-{rank}"),
                          "ab") as log:
                    replicas.append(subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT))
            while True:
                codes = [p.poll() for p in replicas]
                failed = next((c for c in codes if c not in (None, 0)), None)
                if failed is not None:
                    say(f"replica {codes.index(failed)} exited with code {failed}: the job failed")
                    return failed
                if all(c == 0 for c in codes):
                    return 0
                time.sleep(0.5)
        finally:
            for p in replicas:
                if p.poll() is None:
                    p.kill()
                    p.wait()


class MPI(Engine):
    """An MPIJob's launcher command (`mpirun … -np N <rank command>`), its ranks on this machine."""

    def up(self) -> None:
        # As many ranks as the job has slots, whatever this machine's processors; shared memory between ranks
        # without the ptrace-based copy a container may forbid; the ranks' TCP transport on the loopback interface,
        # and mpirun's addresses for its own channel (ORTE's; PRRTE's in Open MPI 5) loopback ones, though Open MPI
        # 4.1's mpirun listens for it on every interface (it has no setting for that).
        self.env.update({"OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
                         "OMPI_MCA_oob_tcp_if_include": "lo", "PRTE_MCA_oob_tcp_if_include": "lo",
                         "OMPI_MCA_btl_tcp_if_include": "lo"})

    def run_task(self, argv: list[str]) -> int:
        at = argv.index("-np") + 2
        rank = [local_entrypoint(word, self.bin) for word in argv[at:]]
        return super().run_task([*argv[:at], sys.executable, __file__, "--rank", "--", *rank])


def _tcp_store(listener: socket.socket, port: int):
    """torch's TCPStore server, in this process, on a socket of ours (whose descriptor it then owns)."""
    from torch.distributed import TCPStore

    return TCPStore(LOOPBACK, port, is_master=True, master_listen_fd=listener.detach(), wait_for_workers=False,
                    multi_tenant=True)


def local_entrypoint(word: str, bin_dir: str) -> str:
    """A command word naming flytekit's entrypoint.py as the image has it (a path, or a `local://` one): that file
    when this machine has it, else the one in this environment's bin folder; any other word as it is."""
    path = word.removeprefix("local://")
    if os.path.exists(path):
        return path
    ours = os.path.join(bin_dir, "entrypoint.py")
    return ours if path.endswith("entrypoint.py") and os.path.exists(ours) else word


def become_rank(argv: list[str]) -> None:
    """Run one MPI rank's command; each rank but the first in a folder of its own."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
    if rank != "0":
        folder = os.path.join(os.getcwd(), f"rank-{rank}")
        os.makedirs(folder, exist_ok=True)
        os.chdir(folder)
    os.execvp(argv[0], argv)


def _own_ports() -> dict[str, str]:
    """Ports of a Ray node whose defaults are fixed numbers, free ones instead: the clusters of attempts running
    at once on this machine (and any other Ray) would otherwise take the same."""
    return {"dashboard-agent-listen-port": str(free_port())}


def _flags(params: dict[str, str]) -> list[str]:
    """`ray start` flags from a RayJob's ray_start_params (a key without a value is a switch)."""
    return [f"--{k}={v}" if v != "" else f"--{k}" for k, v in params.items()]


ENGINES = {"dask": Dask, "ray": Ray, "pytorch": PyTorch, "mpi": MPI}


def run(spec: dict, argv: list[str]) -> int:
    engine = ENGINES[spec["engine"]](spec)
    try:
        started = time.monotonic()
        engine.up()
        say(f"engine up in {time.monotonic() - started:.2f} s")
        return engine.run_task(argv)
    except EngineFailed as e:
        say(f"the {spec['engine']} engine failed: {e}")
        return LOST
    finally:
        engine.stop()


def main() -> None:
    # This file's folder, first on a script's path, holds flytelite's ray.py and dask.py: not the engines.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if sys.argv[1] == "--rank":
        become_rank(sys.argv[3:])
    if sys.argv[1] == "--ray-node":
        ray_worker_node(sys.argv[2:])
        return
    spec = json.loads(sys.argv[1])
    if sys.argv[2] != "--":
        raise SystemExit("usage: launcher.py '<spec>' -- <command>")
    # A SIGTERM (abort) runs the finally clauses, which stop the engine.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    sys.exit(run(spec, sys.argv[3:]))


if __name__ == "__main__":
    main()
