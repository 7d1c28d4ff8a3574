"""Warm workers, the server's side: one zygote per task interpreter, attempts forked from it.

`WarmPool.launch` is the local-process plugin's fast path. It answers None when an attempt must run
cold (not a pyflyte command, runtime packages, an environment that changes how the interpreter
starts, no usable zygote yet); then nothing was started. Once a request is sent it returns a
WarmAttempt (Popen-like: pid, poll(), plus on_exit and kill) without waiting for the zygote's answer: its
pid is None until the zygote says where the attempt runs (Started), or says it could not start it
(Failed), or dies first (the attempt is then `lost`: it may have been forked, so the plugin looks for it
before it calls it a failed start). A request that could not be sent raises OSError (nothing started),
so an attempt is never started twice. No thread blocks writing to the zygote (which stops reading while it
cannot write its news): what its socket does not take is written by the reader thread (ZygoteHandle._send). A zygote that dies is started again on the next launch; attempts it
had forked keep running and are adopted like any process the server did not start (pid + start time).
The attempts of the tasks of one code version, and the items of its map tasks, may run one after
another in a worker (see zygote.py and child.py): their WarmAttempt's pid is the worker's, and its exit
is the attempt's end, reported while the worker lives on. The zygote then offers the worker as idle, and the
server gives its group's next attempt to the worker idle most recently, counting it as started there at
once, without waiting for an answer; a worker idle for worker_idle_seconds is retired.

A zygote follows its environment: before each attempt the pool stats the folders the zygote's interpreter
installs packages into (and flytekit's own file), as the zygote reported them when it started. A package
installed or removed since then means what the zygote imported is stale, so a new zygote takes the attempt;
the old one drains: it forks nothing more, its idle workers end, and it exits after its running attempts,
whose exits it still reports.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from flytelite.plugins.local.workers import messages
from flytelite.plugins.local.workers.environment import EnvironmentSnapshot
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.task_site import task_process_env

log = logging.getLogger(__name__)

ZYGOTE_SCRIPT = str(Path(__file__).with_name("zygote.py"))
ENTRYPOINT = "flytekit.bin.entrypoint"
EXECUTE_COMMANDS = frozenset({"pyflyte-execute", "pyflyte-map-execute"})
RUNTIME_PACKAGES_ENV = "_F_RUNTIME_PACKAGES"
# Variables read when an interpreter (or flytekit) starts: a child of a zygote started without them
# would not see them, so an attempt that sets them differently runs cold.
_STARTUP_ENV_PREFIXES = ("PYTHON", "LD_", "FLYTE_SDK_RICH_TRACEBACKS")
_PER_CHILD_ENV = frozenset({"PYTHONPATH", "PYTHONUNBUFFERED"})
# Arguments of an attempt's command that are its own: its inputs and the places it writes to.
_PER_ATTEMPT_FLAGS = frozenset({"--inputs", "--dest-dir", "--output-prefix", "--raw-output-data-prefix",
                                "--checkpoint-path", "--prev-checkpoint"})
# A worker (a process running the attempts of a group one after another) with none for this long ends.
WORKER_IDLE_SECONDS = 5.0
# With a queue (queue seconds), a worker counts as busy while its item is younger than this (see zygote.py).
SHORT_ITEM_SECONDS = 0.1
# A zygote that failed to start is not tried again for this long.
RETRY_BROKEN_SECONDS = 60.0
# The zygote answers a fork request at once (or within its queue seconds); no answer in this time means it
# is wedged.
FORK_ANSWER_SECONDS = 30.0
# A stopped zygote exits at once; its folder is deleted once it did (see ZygoteHandle.temp_dir).
ZYGOTE_EXIT_SECONDS = 5.0


def pyflyte_command(argv: list[str]) -> list[str] | None:
    """The pyflyte command of a cold argv `<python> -m flytekit.bin.entrypoint <cmd> …`, or None."""
    if len(argv) < 4 or argv[1:3] != ["-m", ENTRYPOINT]:
        return None
    cmd = argv[3:]
    if cmd[0] in EXECUTE_COMMANDS:
        return cmd
    if cmd[0] != "pyflyte-fast-execute" or "--" not in cmd:
        return None
    inner = cmd[cmd.index("--") + 1:]
    return cmd if inner and inner[0] in EXECUTE_COMMANDS else None


def worker_group(command: list[str]) -> str | None:
    """What the attempts that may share a worker have in common: their command without the attempt's own
    inputs and paths, and without which task of the code it runs (its resolver's arguments). Attempts of one
    group (the tasks of one code version, or the items of its map tasks, in any execution) may run one after
    another in a worker."""
    inner = command[command.index("--") + 1:] if command[0] == "pyflyte-fast-execute" else command
    if inner[0] not in EXECUTE_COMMANDS:
        return None
    shared = list(command)
    for i, arg in enumerate(shared[:-1]):
        if arg in _PER_ATTEMPT_FLAGS:
            shared[i + 1] = ""
    if "--resolver" in shared:
        at = shared.index("--resolver")
        if "--" in shared[at:]:
            shared = shared[:shared.index("--", at) + 1]
    return json.dumps(shared)


def starts_alike(env: dict[str, str], zygote_env: dict[str, str]) -> bool:
    """Whether a child of a zygote started with `zygote_env` runs as a fresh interpreter given `env` would."""
    if env.get(RUNTIME_PACKAGES_ENV):
        return False
    keys = {k for k in (*env, *zygote_env) if k.startswith(_STARTUP_ENV_PREFIXES) and k not in _PER_CHILD_ENV}
    return all(env.get(k) == zygote_env.get(k) for k in keys)


def pid_file(work_dir: str) -> str:
    """The attempt's pid file, where its working folder can have no messages.PID_ATTRIBUTE: beside the folder
    (which is the task's own), a file and no folder of its own."""
    return f"{work_dir.rstrip('/')}.pid"


# How long a reader waits for a pid file found without its line's end to be written (the write is one call).
PID_FILE_WRITE_SECONDS = 1.0


def find_by_recorded_pid(work_dir: str) -> tuple[int, int] | None:
    """(pid, start time) of the live warm child of an attempt, from its working folder's messages.PID_ATTRIBUTE or
    its pid file (child.record_pid), or, for an attempt an older flytelite started before an upgrade, from
    <working folder>.warm/pid, where that wrote it."""
    try:
        pid, started = (int(x) for x in os.getxattr(work_dir, messages.PID_ATTRIBUTE).split())
        return (pid, started) if processes.is_alive(pid, started) else None
    except (OSError, ValueError):
        pass
    for path in (pid_file(work_dir), os.path.join(f"{work_dir.rstrip('/')}.warm", "pid")):
        deadline = time.monotonic() + PID_FILE_WRITE_SECONDS
        try:
            while not (text := Path(path).read_text()).endswith("\n") and time.monotonic() < deadline:
                time.sleep(0.01)  # being written
            pid, started = (int(x) for x in text.split())
        except (OSError, ValueError):
            continue
        return (pid, started) if processes.is_alive(pid, started) else None
    return None


class ZygoteRetired(OSError):
    """The zygote was retired (its environment changed) before the request was sent: nothing was started."""


class WarmAttempt:
    """An attempt sent to a zygote: what the plugin needs of a Popen, with news from the zygote.

    Its pid is None until the zygote says where the attempt runs (Started): the server does not wait for that.
    An attempt given to an idle worker has the worker's pid at once."""

    def __init__(self, zygote: ZygoteHandle, request_id: int, pid: int | None = None,
                 start_time: int | None = None, reused: bool = False, group: str | None = None):
        self.zygote, self.request_id, self.pid, self.start_time = zygote, request_id, pid, start_time
        self.group = group
        # Run by a worker that ran a sibling map item before (the pid is that worker's).
        self.reused = reused
        # Sent while the zygote held more of its group's attempts than there are processors: it waits for a busy
        # worker of its group (ZygoteHandle.backlogged), as a pod waits to be scheduled.
        self.waits = False
        self.returncode: int | None = None
        # True when the zygote died first: the exit code will never come; watch the process like an adopted one
        # (one whose pid the zygote never said may have been forked all the same: look for it by its recorded pid).
        self.orphaned = False
        # Why the zygote could not start it (it never ran).
        self.error: str | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._on_start: list[Callable[[WarmAttempt], None]] = []
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self.returncode

    @property
    def lost(self) -> bool:
        """Ended without the zygote ever saying where it ran (it could not start it, or died first)."""
        return self.pid is None and (self.orphaned or self.error is not None)

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Call back (from the zygote's reader thread) once the attempt exits, is orphaned or failed to start."""
        with self._lock:
            if self.returncode is None and not self.orphaned and self.error is None:
                self._callbacks.append(callback)
                return
        callback()

    def on_start(self, callback: Callable[[WarmAttempt], None]) -> None:
        """Call back with the attempt once its pid is known (at once if it is)."""
        with self._lock:
            if self.pid is None:
                self._on_start.append(callback)
                return
        callback(self)

    def kill(self, sig: int) -> bool:
        """Signal the attempt's process group through the zygote (or drop it there if it waits for a worker);
        False if the zygote cannot (use pid + start time).

        True without a signal once the attempt ended: its pid may be a worker running a sibling item by now."""
        if self.returncode is not None or self.error is not None:
            return True
        if self.orphaned:
            return False
        return self.zygote.send(messages.Kill(pid=self.pid, id=self.request_id, sig=int(sig)))

    def _begin(self, pid: int, start_time: int | None, reused: bool) -> None:
        with self._lock:
            self.pid, self.start_time, self.reused = pid, start_time, reused
            callbacks, self._on_start = self._on_start, []
        for callback in callbacks:
            callback(self)

    def _ended(self, returncode: int | None, error: str | None = None) -> None:
        with self._lock:
            if error is not None:
                self.error = error
            elif returncode is None:
                self.orphaned = True
            else:
                self.returncode = returncode
            callbacks, self._callbacks = self._callbacks, []
            self._on_start = []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - one bad callback must not stop the reader
                log.exception("exit callback of warm attempt %s failed", self.pid)


class ZygoteHandle:
    """The server's handle on one zygote process (zygote.py's Zygote): it starts it, sends it requests, and its
    reader thread turns the zygote's messages into attempt news."""

    def __init__(self, interpreter: str, log_path: Path, worker_idle_seconds: float = WORKER_IDLE_SECONDS,
                 queue_seconds: float = 0.0, processors: int = 0, temp_dir: str | None = None,
                 short_seconds: float = SHORT_ITEM_SECONDS, max_processes: int = 0):
        self.interpreter = interpreter
        self.env = task_process_env(dict(os.environ, PYTHONUNBUFFERED="1"))
        self.ready = threading.Event()
        # What the zygote said once ready (None until then).
        self.info: messages.Ready | None = None
        self.alive = True
        # Set once retired: it takes no new attempts and exits after those it runs.
        self.draining = False
        self.started_at = time.monotonic()
        # What the zygote imported from, as it was when it started (known once it is ready).
        self.environment = EnvironmentSnapshot()
        self.worker_idle_seconds = worker_idle_seconds
        self._spawned_ns = time.time_ns()
        self._attempts: dict[int, WarmAttempt] = {}
        # Attempts waiting for their Started or Failed, with when the zygote must have answered (see
        # FORK_ANSWER_SECONDS).
        self._pending: dict[int, tuple[WarmAttempt, float]] = {}
        # How many of the pending attempts each group has (backlogged() is asked on every send, start and exit).
        self._held: collections.Counter[str | None] = collections.Counter()
        self.queue_seconds = queue_seconds
        # What the zygote counts its group's busy workers against (it resolves 0 the same way).
        self.processors = processors or len(os.sched_getaffinity(0))
        # The group of each process started for one (a worker), and each group's idle workers, the most
        # recently idle last: (pid, start time, idle since).
        self._groups: dict[int, str] = {}
        self._idle: dict[str, list[tuple[int, int | None, float]]] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        # Guards the socket's writes and `_out`, what the socket did not take yet (the reader thread writes it
        # once there is room): no thread ever blocks writing to the zygote, which stops reading while it cannot
        # write its news, and only the reader thread, never blocked, lets it write them.
        self._send_lock = threading.Lock()
        self._out = bytearray()
        # Wakes the reader thread to watch for room to write what `_out` holds.
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        self._sock = ours
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # The zygote's temp folder, in `temp_dir`: importing flytekit makes two folders in it (its default
        # context's). Deleted once the zygote exited leaving no attempt running (its children may use them).
        self.temp_dir: str | None = None
        env = self.env
        if temp_dir is not None:
            os.makedirs(temp_dir, exist_ok=True)
            self.temp_dir = tempfile.mkdtemp(prefix="zygote-", dir=temp_dir)
            env = {**env, "TMPDIR": self.temp_dir}
        try:
            with open(log_path, "ab", buffering=0) as out:
                self.proc = subprocess.Popen(
                    [interpreter, ZYGOTE_SCRIPT, str(theirs.fileno()), str(queue_seconds), str(processors),
                     str(short_seconds), str(max_processes)],
                    env=env,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                    start_new_session=True, cwd=str(log_path.parent),
                )
        except OSError:
            ours.close()
            os.close(self._wake_r)
            os.close(self._wake_w)
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
            raise
        finally:
            theirs.close()
        self._reader = threading.Thread(target=self._read, name=f"zygote-{self.proc.pid}", daemon=True)
        self._reader.start()

    @property
    def usable(self) -> bool:
        return self.alive and self.ready.is_set() and self.info is not None and self.info.threads == 1

    def accepts(self, env: dict[str, str]) -> bool:
        return starts_alike(env, self.env)

    def stale(self) -> str | None:
        """What changed in the interpreter's environment since the zygote started (a package folder or
        flytekit's file), or None."""
        return self.environment.changed()

    def run(self, command: list[str], env: dict[str, str], cwd: str, log_path: str, tmp: str,
            group: str | None = None) -> WarmAttempt:
        """Send the attempt and return without waiting for the zygote: in an idle worker of its group it runs
        there from now on (its pid is the worker's); otherwise its pid comes with the zygote's Started (a fork
        takes milliseconds, and a request may wait for a busy worker: a round that waited held up the
        attempts after it)."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            idle = self._idle.get(group) if group else None
            if idle:
                # Started in that worker from now on: an Exit that says it is gone (crossing this request) ends it.
                pid, start_time, _ = idle.pop()
                attempt = self._attempts[pid] = WarmAttempt(self, request_id, pid, start_time, True, group)
            else:
                attempt = WarmAttempt(self, request_id, group=group)
                answer_by = time.monotonic() + self.queue_seconds + FORK_ANSWER_SECONDS
                self._pending[request_id] = (attempt, answer_by)
                self._held[group] += 1
                attempt.waits = self._backlogged(group)
        request = messages.Run(id=request_id, argv=command, env=env, cwd=cwd, log=log_path,
                               tmp=tmp, pid_file=pid_file(cwd),
                               bin_dir=os.path.dirname(self.interpreter), group=group,
                               worker=attempt.pid, worker_start=attempt.start_time)
        with self._send_lock:
            sent = not self.draining and self._send(request)
        if not sent:
            with self._lock:
                self._answered(request_id)
                if attempt.pid is not None and self._attempts.get(attempt.pid) is attempt:
                    del self._attempts[attempt.pid]  # the draining zygote ends that idle worker
            if self.draining:
                raise ZygoteRetired(f"the zygote for {self.interpreter} (pid {self.proc.pid}) was retired")
            raise OSError(f"the zygote for {self.interpreter} is gone")
        return attempt

    def held(self, group: str | None) -> int:
        """How many of the group's attempts were sent and not started yet: those the zygote holds for a busy
        worker (with queue seconds), and forks under way."""
        with self._lock:
            return self._held[group]

    def backlogged(self, group: str | None) -> bool:
        """Whether the zygote holds more of the group's attempts than there are processors: its workers have
        work without the server for a while (only with queue seconds)."""
        with self._lock:
            return self._backlogged(group)

    def _backlogged(self, group: str | None) -> bool:
        return self.queue_seconds > 0 and self._held[group] > self.processors

    def send(self, message: messages.Message) -> bool:
        with self._send_lock:
            return self._send(message)

    def _send(self, message: messages.Message) -> bool:
        """Write the message, or what the socket does not take now into `_out`, written by the reader thread
        (under the send lock). False when the zygote is gone."""
        data = messages.encode(message)
        if not self._out:
            try:
                sent = self._sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                return False
            if sent == len(data):
                return True
            data = data[sent:]
            try:
                os.write(self._wake_w, b"w")
            except BlockingIOError:
                pass  # the reader has wake-ups to read already
            except OSError:
                return False  # the reader ended: the zygote is gone
        self._out += data
        return True

    def _flush(self) -> None:
        """Write what the socket takes of `_out` (the reader thread, when the socket has room)."""
        with self._send_lock:
            try:
                sent = self._sock.send(self._out)
            except BlockingIOError:
                return
            except OSError:
                sent = len(self._out)  # the zygote is gone: the reader sees its end next
            del self._out[:sent]

    def drain(self) -> None:
        """Take no new attempts; the zygote ends its idle workers and exits once its children have exited."""
        with self._send_lock:
            if self.draining:
                return
            self.draining = True
            self._send(messages.Drain())

    def stop(self, kill: bool = False) -> None:
        """Close the control socket (the zygote exits; its running children do not)."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if kill and self.proc.poll() is None:
            self.proc.kill()

    def wait(self, seconds: float) -> None:
        """Until the zygote exited and its reader finished (killed if it did not exit in `seconds`)."""
        self._reader.join(seconds)
        if self._reader.is_alive():
            self.stop(kill=True)
            self._reader.join(seconds)

    # -- the reader thread ------------------------------------------------------------------
    def _read(self) -> None:
        """Read the zygote's news, and write what the other threads could not (see _send): this thread never
        blocks but in poll."""
        lines = messages.Lines()
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        poller.register(self._sock, select.POLLIN)
        writing = False
        try:
            while True:
                if bool(self._out) != writing:
                    writing = not writing
                    poller.modify(self._sock, select.POLLIN | (select.POLLOUT if writing else 0))
                events = poller.poll(self._until_next_look())
                if not events:
                    self._retire_idle()
                    self._check_answers()
                    continue
                for fd, event in events:
                    if fd == self._wake_r:
                        _drain_pipe(self._wake_r)
                        continue
                    if event & select.POLLOUT:
                        self._flush()
                    if event & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        try:
                            data = self._sock.recv(1 << 16)
                        except BlockingIOError:
                            continue
                        if not data:
                            return
                        for message in lines.feed(data):
                            self._dispatch(message)
        except OSError:
            pass
        finally:
            self._died()

    def _until_next_look(self) -> int:
        """Milliseconds until the longest idle worker is due to retire, or until it is time to look for
        requests the zygote did not answer (FORK_ANSWER_SECONDS: a wait that a request sent meanwhile
        cannot shorten, so a wedged zygote is found in one to two times that)."""
        with self._lock:
            since = [idle[0][2] for idle in self._idle.values() if idle]
        wait = FORK_ANSWER_SECONDS
        if since:
            wait = min(wait, min(since) + self.worker_idle_seconds - time.monotonic())
        return max(0, int(wait * 1000) + 1)

    def _check_answers(self) -> None:
        """Stop a zygote that left a request unanswered past its deadline: it is wedged. Its attempts end as
        orphans (_died), looked for as after a restart."""
        now = time.monotonic()
        with self._lock:
            late = [request_id for request_id, (_, answer_by) in self._pending.items() if answer_by < now]
        if late:
            log.error("the zygote for %s (pid %d) did not answer request %d in %.0fs; it is stopped",
                      self.interpreter, self.proc.pid, late[0], self.queue_seconds + FORK_ANSWER_SECONDS)
            self.stop(kill=True)

    def _retire_idle(self) -> None:
        due = time.monotonic() - self.worker_idle_seconds
        with self._lock:
            retired = [pid for idle in self._idle.values() for pid, _, since in idle if since <= due]
            for group, idle in list(self._idle.items()):
                self._idle[group] = [worker for worker in idle if worker[2] > due]
            for pid in retired:
                del self._groups[pid]
        for pid in retired:
            self.send(messages.Retire(pid=pid))

    def _dispatch(self, msg: messages.Message) -> None:
        if isinstance(msg, messages.Exit):
            with self._lock:
                attempt = self._attempts.pop(msg.pid, None)
                group = self._groups.get(msg.pid)
                if attempt is None and group is not None:
                    # A worker runs an attempt or is idle, never both: without one, an idle worker is gone.
                    self._idle[group] = [worker for worker in self._idle.get(group, ()) if worker[0] != msg.pid]
                if msg.idle and group is not None and attempt is not None:
                    self._idle.setdefault(group, []).append((msg.pid, attempt.start_time, time.monotonic()))
                elif not msg.idle:
                    self._groups.pop(msg.pid, None)
            if attempt is not None:
                attempt._ended(msg.code)
        elif isinstance(msg, messages.Started):
            with self._lock:
                attempt = self._answered(msg.id)
                if attempt is None:
                    return
                self._attempts[msg.pid] = attempt
                if attempt.group is not None:
                    self._groups[msg.pid] = attempt.group
            attempt._begin(msg.pid, msg.start_time, msg.reused)
        elif isinstance(msg, messages.Failed):
            with self._lock:
                attempt = self._answered(msg.id)
            if attempt is not None and msg.signal:
                attempt._ended(-msg.signal)  # dropped unstarted by a Kill: it ends as killed
            elif attempt is not None:
                attempt._ended(None, error=msg.error)
        elif isinstance(msg, messages.Ready):
            self.environment = EnvironmentSnapshot.from_ready(msg.site_dirs, msg.flytekit_file, self._spawned_ns)
            self.info = msg
            if msg.threads != 1:
                log.warning("the zygote for %s runs %s threads after importing flytekit: forking it is unsafe, "
                            "tasks of this interpreter run cold", self.interpreter, msg.threads)
            self.ready.set()

    def _answered(self, request_id: int) -> WarmAttempt | None:
        """The pending attempt of the request, no longer pending (None if it was not); under the lock."""
        attempt, _ = self._pending.pop(request_id, (None, 0.0))
        if attempt is not None:
            self._held[attempt.group] -= 1
            if not self._held[attempt.group]:
                del self._held[attempt.group]
        return attempt

    def _died(self) -> None:
        with self._lock:
            self.alive = False
            attempts, self._attempts = list(self._attempts.values()), {}
            attempts += [attempt for attempt, _ in self._pending.values()]
            self._pending, self._idle, self._groups = {}, {}, {}
            self._held.clear()
        with self._send_lock:
            self._sock.close()
            self._out.clear()
            os.close(self._wake_w)
        os.close(self._wake_r)
        self.ready.set()
        self.proc.wait()
        if self.temp_dir is not None and not attempts:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        for attempt in attempts:
            attempt._ended(None)


class WarmPool:
    """Zygotes by interpreter, started on first use (or by prestart) and again after they die."""

    def __init__(self, logs_dir: Path, ready_seconds: float = 60.0, worker_idle_seconds: float = WORKER_IDLE_SECONDS,
                 queue_seconds: float = 0.0, processors: int = 0, temp_dir: str | None = None,
                 short_seconds: float = SHORT_ITEM_SECONDS, max_processes: int = 0):
        self.logs_dir = logs_dir
        # Where each zygote gets a temp folder of its own (None: the system's temp folder, never cleaned).
        self.temp_dir = temp_dir
        self.ready_seconds = ready_seconds
        self.worker_idle_seconds = worker_idle_seconds
        # How long an attempt may wait for a busy worker of its group, against how many processors "busy" is
        # counted (0: those the zygote may run on), and how long after its item started a worker is busy; see
        # zygote.py.
        self.queue_seconds = queue_seconds
        self.processors = processors
        self.short_seconds = short_seconds
        # How many processes a zygote's attempts and idle workers may be at once (0: no limit; see zygote.py).
        self.max_processes = max_processes
        self._zygotes: dict[str, ZygoteHandle] = {}
        # Retired zygotes still running attempts (stopped with the pool).
        self._draining: list[ZygoteHandle] = []
        self._broken: dict[str, float] = {}
        self._lock = threading.Lock()
        self._closed = False
        # Attempts started warm so far (all zygotes, all time), and how many of them ran in a worker that
        # ran a sibling map item before: what tests and benchmarks look at.
        self.forks = 0
        self.reused = 0

    def prestart(self, interpreter: str) -> None:
        self._zygote(interpreter)

    def launch(self, argv: list[str], env: dict[str, str], cwd: str, log_path: str, tmp: str,
               group: str | None = None) -> WarmAttempt | None:
        """Send the attempt to its interpreter's zygote (see ZygoteHandle.run); None when it must run cold
        (nothing started).

        Attempts of one group (by default: worker_group's, the tasks of one code version or the items of its
        map tasks) may run one after another in a worker. `tmp` is its temp folder."""
        command = pyflyte_command(argv)
        if command is None or env.get(RUNTIME_PACKAGES_ENV):
            return None
        for _ in range(3):  # another attempt's launch may retire the zygote between our check and our request
            zygote = self._current(argv[0])
            if zygote is None or not zygote.accepts(env):
                return None
            try:
                attempt = zygote.run(command, env, cwd, log_path, tmp, group or worker_group(command))
            except ZygoteRetired:
                continue
            with self._lock:
                self.forks += 1
            attempt.on_start(self._count_start)
            return attempt
        return None

    def _count_start(self, attempt: WarmAttempt) -> None:
        if attempt.reused:
            with self._lock:
                self.reused += 1

    def _current(self, interpreter: str) -> ZygoteHandle | None:
        """The interpreter's ready zygote, started again if its environment changed; None: run cold."""
        for _ in range(2):
            zygote = self._zygote(interpreter)
            if zygote is None:
                return None
            if not zygote.ready.wait(self.ready_seconds) or not zygote.usable:
                if not zygote.alive:
                    self._mark_broken(zygote)
                return None
            changed = zygote.stale()
            if changed is None:
                return zygote
            log.info("%s changed since the zygote for %s (pid %d) started: a new zygote takes the next attempts, "
                     "this one exits after those it runs", changed, interpreter, zygote.proc.pid)
            self._retire(zygote)
        return None  # changing again as fast as zygotes start: this attempt runs cold

    def zygote_pid(self, interpreter: str) -> int | None:
        with self._lock:
            zygote = self._zygotes.get(interpreter)
        return zygote.proc.pid if zygote is not None and zygote.alive else None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            zygotes, self._zygotes = [*self._zygotes.values(), *self._draining], {}
            self._draining = []
        for zygote in zygotes:
            zygote.stop()
        for zygote in zygotes:  # their folders go once they exited (a wedged one is killed)
            zygote.wait(ZYGOTE_EXIT_SECONDS)

    def _zygote(self, interpreter: str) -> ZygoteHandle | None:
        with self._lock:
            if self._closed:
                return None
            zygote = self._zygotes.get(interpreter)
            if zygote is not None and zygote.alive:
                return zygote
            if time.monotonic() < self._broken.get(interpreter, 0.0):
                return None
            if zygote is not None and zygote.ready.is_set() and zygote.info is not None:
                log.warning("the zygote for %s exited (code %s); starting a new one", interpreter,
                            zygote.proc.returncode)
            try:
                zygote = ZygoteHandle(interpreter, self.logs_dir / "zygotes" / f"{_safe(interpreter)}.log",
                                      self.worker_idle_seconds, self.queue_seconds, self.processors, self.temp_dir,
                                      self.short_seconds, self.max_processes)
            except OSError as e:
                log.warning("could not start a zygote for %s (%s): its tasks run cold", interpreter, e)
                self._broken[interpreter] = time.monotonic() + RETRY_BROKEN_SECONDS
                return None
            self._zygotes[interpreter] = zygote
            return zygote

    def _mark_broken(self, zygote: ZygoteHandle) -> None:
        if zygote.info is not None:
            return  # it ran before: a later launch simply starts a new one
        log.warning("the zygote for %s exited while starting (code %s, log in %s): its tasks run cold for %.0fs",
                    zygote.interpreter, zygote.proc.returncode, self.logs_dir / "zygotes", RETRY_BROKEN_SECONDS)
        with self._lock:
            self._broken[zygote.interpreter] = time.monotonic() + RETRY_BROKEN_SECONDS

    def _retire(self, zygote: ZygoteHandle) -> None:
        """The next launch starts a new zygote; this one drains (see ZygoteHandle.drain)."""
        with self._lock:
            if self._zygotes.get(zygote.interpreter) is zygote:
                del self._zygotes[zygote.interpreter]
            self._draining = [z for z in self._draining if z.alive and z is not zygote] + [zygote]
        zygote.drain()


def _drain_pipe(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name.strip("/"))
