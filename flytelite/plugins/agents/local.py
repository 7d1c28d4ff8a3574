"""The agent servers flytelite starts itself: `pyflyte serve agent` (flytekit's agent server) with the
interpreter of a task environment, one per environment, started when a task first needs it.

A server is started in the background; rounds that need it meanwhile are told to wait and are woken when
it answers its first ListAgents (what it serves is learnt then). One that died is started again on next
use. Each server reads its standard input until end of file and exits then: the pipe's other end is held
by this process only, so the servers go with the flytelite server even when it is killed. close() stops
them. Never imports flytekit here: the server runs in the task's environment, which may differ from ours.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flyteidl.admin import agent_pb2

from flytelite.config.agents import AgentDeployment
from flytelite.plugins.agents.client import AgentCallFailed, AgentClient
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.task_site import task_process_env

log = logging.getLogger(__name__)

# Runs `pyflyte serve agent <args>` after starting a thread that exits the process when stdin closes.
_PROGRAM = """
import os, sys, threading
def _watch_parent():
    try:
        while sys.stdin.buffer.read(65536):
            pass
    finally:
        os._exit(0)
threading.Thread(target=_watch_parent, daemon=True, name="flytelite-parent-watch").start()
from flytekit.clis.sdk_in_container.pyflyte import main
sys.argv = ["pyflyte", "serve", "agent", *sys.argv[1:]]
main()
"""
STOP_GRACE_SECONDS = 5.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class AgentServerFailed(Exception):
    pass


@dataclass
class TaskTypeSupport:
    """What an agent server said it serves: task type name -> is the agent synchronous."""

    agents: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, agents: list[agent_pb2.Agent]) -> TaskTypeSupport:
        """As FlytePropeller's getAgentRegistry reads a ListAgents answer (old and new fields)."""
        out: dict[str, bool] = {}
        for agent in agents:
            for task_type in agent.supported_task_types:
                out[task_type] = agent.is_sync
            for category in agent.supported_task_categories:
                out[category.name] = agent.is_sync
        return cls(out)


@dataclass
class LocalAgentServer:
    interpreter: str
    log_path: Path
    proc: subprocess.Popen | None = None
    deployment: AgentDeployment | None = None
    support: TaskTypeSupport | None = None
    error: str = ""
    waiters: list[Callable[[float | None], None]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return self.support is not None and self.proc is not None and self.proc.poll() is None


class LocalAgentServers:
    def __init__(self, logs_dir: Path, work_dir: Path, env: Callable[[], dict[str, str]], start_seconds: float,
                 timeout_seconds: float):
        self.logs_dir = logs_dir / "agents"
        self.work_dir = work_dir / "agents"
        self._env = env
        self.start_seconds = start_seconds
        self.timeout_seconds = timeout_seconds
        self._lock = threading.Lock()
        self._servers: dict[str, LocalAgentServer] = {}
        self._closed = False

    def lookup(self, interpreter: str, wake: Callable[[float | None], None]) -> LocalAgentServer | None:
        """The running server of this environment; None while it starts (`wake` is called once it is up or
        has failed). Raises AgentServerFailed when its last start failed (the next lookup starts it again)."""
        with self._lock:
            server = self._servers.get(interpreter)
            if server is not None and server.ready:
                return server
            if server is not None and server.error:
                del self._servers[interpreter]
                raise AgentServerFailed(server.error)
            if server is not None and server.support is not None:
                # It was up and has died since: start another.
                assert server.proc is not None, "a server that answered was started"
                log.warning("the agent server of %s (pid %d) exited with %s; starting it again", interpreter,
                            server.proc.pid, server.proc.returncode)
                server = None
            if server is None:
                if self._closed:
                    raise AgentServerFailed("the engine is stopping")
                server = self._servers[interpreter] = LocalAgentServer(interpreter, self._log_path(interpreter))
                threading.Thread(target=self._start, args=(server,), daemon=True,
                                 name="agent-server-start").start()
            server.waiters.append(wake)
            return None

    def wait(self, interpreter: str, seconds: float) -> LocalAgentServer:
        """The running server of this environment, started if need be, waiting at most `seconds`."""
        up = threading.Event()
        deadline = time.monotonic() + seconds
        while True:
            server = self.lookup(interpreter, lambda _delay: up.set())
            if server is not None:
                return server
            if not up.wait(max(0.0, deadline - time.monotonic())):
                raise AgentServerFailed(f"the agent server of {interpreter} did not start within {seconds:.0f} s")
            up.clear()

    def _log_path(self, interpreter: str) -> Path:
        digest = hashlib.sha1(interpreter.encode()).hexdigest()[:8]
        return self.logs_dir / f"{_UNSAFE.sub('_', interpreter.strip('/'))[-60:]}-{digest}.log"

    def _start(self, server: LocalAgentServer) -> None:
        try:
            proc = self._spawn(server)
            self._wait_ready(server, proc)
        except Exception as e:  # noqa: BLE001 - whatever went wrong is the task's error message
            server.error = str(e) if isinstance(e, AgentServerFailed) else f"{type(e).__name__}: {e}"
            log.warning("could not start the agent server of %s: %s", server.interpreter, server.error)
        with self._lock:
            waiters, server.waiters = server.waiters, []
        for wake in waiters:
            wake(None)

    def _spawn(self, server: LocalAgentServer) -> subprocess.Popen:
        port, metrics_port = _free_port(), _free_port()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        server.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = task_process_env({**os.environ, **self._env(), "PYTHONUNBUFFERED": "1"})
        argv = [server.interpreter, "-c", _PROGRAM, "--port", str(port), "--prometheus_port", str(metrics_port)]
        with open(server.log_path, "ab", buffering=0) as out:
            proc = subprocess.Popen(argv, env=env, cwd=self.work_dir, stdin=subprocess.PIPE, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        with self._lock:
            closed = self._closed
            server.proc = proc
        if closed:
            _stop(proc)
            raise AgentServerFailed("the engine is stopping")
        server.deployment = AgentDeployment(endpoint=f"127.0.0.1:{port}", default_timeout_seconds=self.timeout_seconds)
        log.info("started the agent server of %s (pid %d, port %d, log %s)", server.interpreter, proc.pid, port,
                 server.log_path)
        return proc

    def _wait_ready(self, server: LocalAgentServer, proc: subprocess.Popen) -> None:
        assert server.deployment is not None, "_start sets the deployment before it waits"
        client = AgentClient(AgentDeployment(endpoint=server.deployment.endpoint, default_timeout_seconds=1.0))
        deadline = time.monotonic() + self.start_seconds
        try:
            while True:
                if proc.poll() is not None:
                    raise AgentServerFailed(
                        f"the agent server `pyflyte serve agent` of {server.interpreter} exited with code "
                        f"{proc.returncode} before it served (does that environment have flytekit's agent extras, "
                        f"`pip install 'flytekit[agent]'`?); the end of its log {server.log_path}:\n"
                        f"{processes.tail(str(server.log_path)).strip()}")
                if time.monotonic() > deadline:
                    _stop(proc)
                    raise AgentServerFailed(f"the agent server of {server.interpreter} did not answer within "
                                            f"{self.start_seconds:.0f} s; see its log {server.log_path}")
                try:
                    agents = client.list_agents(wait_for_ready=True)
                except AgentCallFailed:
                    continue
                server.support = TaskTypeSupport.of(agents)
                log.info("the agent server of %s serves task types %s", server.interpreter,
                         ", ".join(sorted(server.support.agents)) or "none")
                return
        finally:
            client.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            if server.proc is not None:
                _stop(server.proc)


def _stop(proc: subprocess.Popen) -> None:
    """Close its stdin (it exits by itself), then SIGTERM, then SIGKILL; reap it."""
    if proc.poll() is not None:
        return
    try:
        assert proc.stdin is not None, "agent servers start with stdin=PIPE"
        proc.stdin.close()
        proc.wait(STOP_GRACE_SECONDS)
        return
    except (OSError, subprocess.TimeoutExpired):
        pass
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
