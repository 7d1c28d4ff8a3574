"""The zygote: a pre-imported, thread-free Python process that forks one child per task attempt.

Run as a script by a task environment's interpreter (`python zygote.py <fd>`), so it needs only the
standard library and flytekit, never flytelite. It imports `flytekit.bin.entrypoint` once; each
child then does what `pyflyte-fast-execute … -- pyflyte-execute …` does in a fresh process, minus
the interpreter start and the imports. The zygote must never start threads, open gRPC channels,
do flytekit I/O or import user code: all of that would be shared by (or broken in) every child.

Protocol: JSON lines over the inherited unix socket <fd>.
  server -> zygote: {"op": "run", "id", "argv", "env", "cwd", "log", "tmp", "pid_file", "bin_dir"}
                    {"op": "kill", "pid", "sig"}
  zygote -> server: {"ev": "ready", ...}, {"ev": "started", "id", "pid"}, {"ev": "failed", "id", "error"},
                    {"ev": "exit", "pid", "code"} (code < 0: killed by that signal, as subprocess reports)
The zygote exits when the server's end of the socket closes; running children keep running (a
restarted server adopts them by the pid it persisted or by their pid file).
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import sys
import tarfile
import tempfile
import threading
import traceback

# The script's own folder is not a place user code or flytekit is imported from.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

# Imported once here so that children do not each import them (what a pyflyte-execute run needs).
import flytekit.core.python_auto_container  # noqa: E402,F401  (after the sys.path fix above)
import flytekit.interfaces.random  # noqa: E402
import flytekit.loggers  # noqa: E402
from flytekit.bin import entrypoint  # noqa: E402


def _base_sys_path() -> list[str]:
    """sys.path without the entries PYTHONPATH put there (each child puts its own attempt's)."""
    from_env = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = list(sys.path)
    for entry in from_env:
        if entry in path:
            path.remove(entry)
    return path


BASE_SYS_PATH = _base_sys_path()


class Zygote:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""
        self.children: set[int] = set()
        self.selector = selectors.DefaultSelector()
        # SIGCHLD wakes the select loop through a self-pipe; children are reaped there, not in the handler.
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector.register(sock, selectors.EVENT_READ, "control")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "sigchld")

    def send(self, message: dict) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def serve(self) -> None:
        import flytekit

        self.send({"ev": "ready", "pid": os.getpid(), "flytekit": flytekit.__version__,
                   "flytekit_file": flytekit.__file__, "python": sys.version, "threads": _native_threads()})
        while True:
            for key, _ in self.selector.select():
                if key.data == "sigchld":
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                elif not self.read_requests():
                    return

    def read_requests(self) -> bool:
        data = self.sock.recv(1 << 20)
        if not data:
            return False  # the server is gone
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            request = json.loads(line)
            if request["op"] == "run":
                self.run(request)
            elif request["op"] == "kill" and request["pid"] in self.children:
                # Only an unreaped child: its pid (and group id) cannot have been given to another process.
                kill_group(request["pid"], request["sig"])
        return True

    def run(self, request: dict) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        # The child closes its end once it leads its own session: only then is the attempt reported
        # started, so a kill of its process group right after cannot miss it.
        session_r, session_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            os.close(session_r)
            os.close(session_w)
            self.send({"ev": "failed", "id": request["id"], "error": f"fork failed: {e}"})
            return
        if pid == 0:
            code = 1
            try:
                os.close(session_r)
                self.become_child()
                code = run_attempt(request, session_w)
            finally:
                os._exit(code)
        os.close(session_w)
        os.read(session_r, 1)  # EOF once the child called setsid (or died)
        os.close(session_r)
        self.children.add(pid)
        # Read while the child cannot have been reaped yet (it is ours until reap() runs). The pid file is
        # written before the server hears of the pid: a server that crashes now finds the child by it.
        started = start_time(pid)
        try:
            _write_pid_file(request["pid_file"], pid, started)
        except OSError as e:
            print(f"zygote: could not write {request['pid_file']}: {e}", file=sys.stderr)
        self.send({"ev": "started", "id": request["id"], "pid": pid, "start_time": started})

    def become_child(self) -> None:
        """Drop what is the zygote's own: the control socket, the SIGCHLD plumbing."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.selector.close()
        self.sock.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.send({"ev": "exit", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


def kill_group(pid: int, sig: int) -> None:
    """Signal the attempt's process group (its own subprocesses too); the leader itself if no group yet."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    except PermissionError:
        pass


def _native_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


# -- in the child ------------------------------------------------------------------------------
def run_attempt(request: dict, session_fd: int) -> int:
    """Become the attempt's process (as the cold path starts it) and run the pyflyte command; the exit code."""
    os.setsid()  # a kill of the group reaches the task's own subprocesses; the server finds it as a leader
    os.close(session_fd)
    # Also written here, in case the zygote is killed before it writes it.
    _write_pid_file(request["pid_file"], os.getpid(), start_time(os.getpid()))
    _redirect_output(request["log"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.makedirs(request["tmp"], exist_ok=True)
    tempfile.tempdir = request["tmp"]
    _reseed()
    _reset_loggers()
    argv = list(request["argv"])
    first_path = request["cwd"]
    # As the cold process sees it: `python -m flytekit.bin.entrypoint pyflyte-execute …`.
    sys.argv = [entrypoint.__file__, *argv]
    try:
        _push_file_access()
        if argv[0] == "pyflyte-fast-execute":
            argv = _fast_execute(argv[1:])
            # The inner pyflyte-execute is a console script in the interpreter's bin folder.
            first_path = request["bin_dir"]
            sys.argv = [os.path.join(request["bin_dir"], argv[0]), *argv[1:]]
        _set_sys_path(first_path)
        entrypoint._pass_through.main(args=argv, prog_name="pyflyte", standalone_mode=True)
        code = 0
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException:  # noqa: BLE001 - report it as the interpreter would, then exit 1
        sys.excepthook(*sys.exc_info())
        code = 1
    return _finish(code)


def start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot (with the pid, what identifies a process across pid reuse)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def _write_pid_file(path: str, pid: int, started: int | None) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{pid} {started}\n")
    os.replace(tmp, path)


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)


def _reseed() -> None:
    """Every child would otherwise draw the zygote's random numbers (and flytekit's 'random' names)."""
    import random

    flytekit.interfaces.random.random.seed()
    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def _reset_loggers() -> None:
    """flytekit configures its loggers from the environment at import: configure them from the attempt's."""
    import logging

    for name in ("user_space", "developer"):
        logging.getLogger(name).handlers.clear()
    flytekit.loggers.initialize_global_loggers()


def _fast_execute(args: list[str]) -> list[str]:
    """What `pyflyte-fast-execute` does before it starts the inner command; returns the inner command."""
    # flytekit's own click command parses the arguments (without running it, which would start a process).
    params = entrypoint.fast_execute_task_cmd.make_context("pyflyte-fast-execute", list(args)).params
    distribution, dest_dir = params["additional_distribution"], params["dest_dir"]
    args = list(params["task_execute_cmd"])
    if distribution is not None:
        dest_dir = dest_dir or os.getcwd()
        _download_distribution(distribution, dest_dir)
    inner: list[str] = []
    for arg in args:
        if arg == "--resolver":
            inner += ["--dynamic-addl-distro", distribution, "--dynamic-dest-dir", dest_dir]
        inner.append(arg)
    if dest_dir is not None:
        resolved = os.path.realpath(os.path.expanduser(dest_dir))
        current = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = f"{current}{os.pathsep}{resolved}" if current else resolved
    return inner


def _download_distribution(distribution: str, dest_dir: str) -> None:
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.tools.fast_registration import download_distribution

    name = os.path.basename(distribution)
    if not name.endswith(".tar.gz"):
        download_distribution(distribution, dest_dir)  # not a tarball: flytekit's own handling and errors
        return
    if not os.path.isdir(dest_dir):
        raise ValueError("Destination path is required to download distribution and it should be a directory")
    local = os.path.join(dest_dir, name)
    FlyteContextManager.current_context().file_access.get_data(distribution, os.path.join(dest_dir, ""))
    with tarfile.open(local, "r:gz") as archive:
        archive.extractall(dest_dir, filter="data")


def _set_sys_path(first: str) -> None:
    """sys.path as a fresh interpreter for this attempt would have it: first entry, PYTHONPATH, the rest."""
    from_env = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [first, *from_env, *BASE_SYS_PATH]
    import importlib

    importlib.invalidate_caches()


def _push_file_access() -> None:
    """A FileAccessProvider built from the attempt's environment, sandboxed in its temp dir."""
    from flytekit.configuration import DataConfig
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.core.data_persistence import FileAccessProvider

    root = tempfile.mkdtemp(prefix="flyte-")
    provider = FileAccessProvider(local_sandbox_dir=os.path.join(root, "sandbox"),
                                  raw_output_prefix=os.path.join(root, "raw"), data_config=DataConfig.auto())
    ctx = FlyteContextManager.current_context().new_builder().with_file_access(provider).build()
    FlyteContextManager.push_context(ctx)


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _finish(code: int) -> int:
    """What interpreter shutdown does that matters: wait for threads, run atexit hooks, flush."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


def _warm_caches() -> None:
    """Pure computation every task load repeats: flytekit parses each task's docstring with regexes
    that docstring_parser compiles on first use. Compiled once here, every child finds them cached."""
    import docstring_parser

    docstring_parser.parse("Summary.\n\nArgs:\n    x: a value\n\nReturns:\n    a value\n")


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    zygote = Zygote(sock)
    _warm_caches()
    # What children inherit from the zygote should not be scanned or copied by each child's collector.
    gc.collect()
    gc.freeze()
    zygote.serve()


if __name__ == "__main__":
    main()
