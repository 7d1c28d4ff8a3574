"""The local-process plugin: runs a task's container command as a process on this machine.

The container image names a Python environment (config `images`), not something to pull. Each
attempt runs in its own working directory and temp folder with its own log file; results are the files
the task entrypoint writes under the output prefix (outputs.pb, error.pb, futures.pb), never the exit code.
An attempt starts its process only holding a task slot (plugins/slots.py, shared with the raw-container
plugin): the others wait in QUEUED, as pods wait for room on a node.

Durability: an attempt is recorded as "launching", then started; the pid and its start time are
recorded so that after a restart a live process is adopted and waited for, and a dead one is judged by
the files it left. With a remote blob store the "launching" record is persisted by the engine before
the next round starts the process. With a local one the attempt starts in the round that prepares it:
the prepare first creates the attempt's output folder, so a prepare that finds the folder there knows an
earlier life of the server may have started the process, and looks for it before starting one. An
attempt sent to a warm zygote stays "launching" until the zygote says which process runs it (see
WarmPool.launch); a restart meanwhile finds that process by the pid file the zygote wrote. The
machine is recorded too: a replica that takes over an attempt started on another machine cannot see its
process, so it judges the attempt by its files at once (no result: a retryable system error).
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from flyteidl.core import execution_pb2

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.metrics import OWN
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import (
    Plugin,
    PluginPhase,
    PluginPhaseInfo,
    PluginState,
    TaskExecutionContext,
)
from flytelite.plugins.machinery.environment import flyte_task_env
from flytelite.plugins.machinery.results import written_result
from flytelite.plugins.machinery.slots import TaskSlots, machine_slots
from flytelite.plugins.machinery.target import other_containers, primary_container_name
from flytelite.plugins.machinery.task_site import IMAGE_ENV, task_process_env
from flytelite.plugins.machinery.template import TemplateError, rendered_command
from flytelite.plugins.warm.pool import (
    WarmAttempt,
    WarmPool,
    find_by_pid_file,
    scratch_dir,
)

log = logging.getLogger(__name__)

PYFLYTE_COMMANDS = frozenset({"pyflyte-execute", "pyflyte-fast-execute", "pyflyte-map-execute"})
PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
# Seconds between SIGTERM and SIGKILL when a task is aborted or times out.
KILL_GRACE_SECONDS = 3.0
# Poll interval for a process we cannot get exit notifications for.
POLL_SECONDS = 1.0
# The longest a round woken by a warm attempt's exit waits while the zygote holds work for its workers (see
# LocalProcessPlugin._warm_news).
BATCH_SECONDS = 0.05
# Versions of an attempt's QUEUED phase, in the order they can follow each other: waiting for a task slot
# (engine.max_task_processes), then held by a zygote for a busy warm worker.
ROOM_VERSION = 1
HELD_VERSION = 2
# How long a sweep of finished attempts' folders waits before it starts. A folder is handed over in the round
# that starts the finished attempt's successor: a sweep at once took the GIL from that round (rmtree is Python
# between its system calls) and made it ~0.3 ms slower; later, it runs while the successor's task does, with
# what the rounds of the meantime handed over.
SWEEP_DELAY_SECONDS = 0.02
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class AttemptStatus(str, Enum):
    """Where an attempt's process is in its life (persisted by value in the plugin state)."""

    LAUNCHING = "launching"  # recorded, maybe started: a restart looks for the process before starting one
    RUNNING = "running"      # started; pid and start_time say which process
    DONE = "done"            # the process is gone: its files decide
    ABORTED = "aborted"


@dataclass
class AttemptState(PluginState):
    """What the plugin remembers of one attempt (persisted by the engine; see PluginState)."""

    status: AttemptStatus | None = None
    # Names the attempt's process (an environment variable) so that it can be found after a restart.
    marker: str = ""
    # The machine that started the process (None: recorded before machines were, so this one).
    machine: str | None = None
    output_prefix: str = ""
    log_path: str = ""
    work_dir: str = ""
    pid: int | None = None
    start_time: int | None = None
    # Found running after a restart rather than started by this server.
    adopted: bool = False
    exit_code: int | None = None

    def __post_init__(self) -> None:
        if self.status is not None:
            self.status = AttemptStatus(self.status)


class LocalProcessPlugin(Plugin):
    id = "local-process"
    # Besides python-task: flytekit task types that run flytekit's own entrypoint in their image (SQLite3Task,
    # eager workflows' failure handler). Raw containers have their own plugin (plugins/container.py).
    # flytekitplugins-pod's `sidecar` tasks run their pod's primary container; other task types that carry a
    # container run here too, this being the default plugin (registry.py).
    task_types: tuple[str, ...] = ("python-task", "container", "sqlite", "eager_failure_handler_task", "sidecar")
    is_default = True
    # Refuse containers that do not run a flytekit entrypoint (a subclass may run any command).
    flytekit_entrypoint_only = True

    def __init__(self, ctx: Context, slots: TaskSlots | None = None):
        self.ctx = ctx
        self.machine = ctx.config.engine.machine
        self.watcher = processes.ExitWatcher()
        self._loop = None
        self._lock = threading.Lock()
        # Attempts this server prepared but has not started: safe to start without looking for a process.
        self._prepared: set[str] = set()
        # Processes this server started (our children, so we reap them), by attempt marker.
        self._children: dict[str, subprocess.Popen | WarmAttempt] = {}
        # Attempts' temp folders (see _temp_dir), one folder per attempts folder (servers on one machine each
        # have their own).
        where = hashlib.sha1(str(ctx.config.attempts_dir.resolve()).encode()).hexdigest()[:10]
        self._temp_root = os.path.join(tempfile.gettempdir(), f"flytelite-{where}")
        engine = ctx.config.engine
        # Each attempt holds one (by its marker) from before its process starts until it is known to have ended.
        self.slots = slots or TaskSlots(engine.max_task_processes or machine_slots())
        ctx.metrics.gauge(f"{OWN}task_slots:size", "Task processes this machine runs at once",
                          lambda: self.slots.size)
        ctx.metrics.gauge(f"{OWN}task_slots:in_use", "Task slots held by attempts", self.slots.in_use)
        # Attempts forked from a zygote when they can be (see plugins/warm); the others run cold.
        self.warm = (WarmPool(ctx.config.logs_dir, engine.warm_start_seconds, queue_seconds=engine.warm_queue_seconds,
                              temp_dir=self._temp_root, max_processes=self.slots.size)
                     if engine.warm_workers else None)
        if self.warm is not None:
            warm = self.warm
            ctx.metrics.gauge(f"{OWN}warm:forks", "Attempts forked from a zygote", lambda: warm.forks, "counter")
            ctx.metrics.gauge(f"{OWN}warm:reused", "Attempts run by a worker that had run another",
                              lambda: warm.reused, "counter")
        # Finished attempts' folders are deleted where they are by one thread at the lowest CPU priority. Those
        # it has not deleted when the server stops are moved into the trash folder, which the next start empties.
        self._trash = ctx.config.attempts_dir / ".trash"
        self._cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="work-dir-cleanup",
                                           initializer=_lowest_priority)
        # Folders to delete, and whether a sweep is queued and has not started yet (one covers every folder
        # handed over before it starts: a hand-over to the thread per folder was a twentieth of a chain's rounds).
        self._doomed: list[str] = []
        self._sweep_queued = False
        self._closing = threading.Event()

    def capacity(self) -> int | None:
        return self.slots.size

    def setup(self, loop) -> None:
        self._loop = loop
        self.watcher.bind(loop)
        try:
            self._cleaner.submit(_empty, self._trash)
        except RuntimeError:  # closed already
            pass
        if self.warm is not None:
            self.warm.prestart(self.ctx.config.interpreter_for(""))

    def close(self) -> None:
        self.watcher.close()
        if self.warm is not None:
            self.warm.close()
        # Not waited for: deleting a thousand finished attempts' folders took a loaded machine many seconds.
        # What is left is moved into the trash, for the next start (a folder the thread is deleting meanwhile
        # may be moved half-deleted: the next start deletes the rest).
        self._closing.set()
        self._cleaner.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            doomed, self._doomed = self._doomed, []
        for path in doomed:
            _move_to_trash(path, self._trash)
        _remove_if_empty(self._temp_root)

    # -- the attempt's life ------------------------------------------------------------------
    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        st = AttemptState.load(tctx.state)
        try:
            if st.status is None:
                return self._prepare(tctx, st)
            if st.status == AttemptStatus.LAUNCHING:
                return self._launch(tctx, st)
            if st.status == AttemptStatus.RUNNING:
                return self._check(tctx, st)
            return self._result(tctx, st)
        finally:
            st.store(tctx.state)

    def _prepare(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo:
        task, container = tctx.task, tctx.container
        if not (len(container.command) or len(container.args)):
            return PluginPhaseInfo.failure(
                E.NO_CONTAINER, f"task {task.id.name} has no container command; the local-process plugin "
                "runs tasks whose container args are a pyflyte-execute command", kind=USER, retryable=False)
        others = other_containers(task)
        if others:
            named = ", ".join(f"{'init container' if c.init else 'container'} {c.name!r} (image {c.image!r})"
                              for c in others)
            return PluginPhaseInfo.failure(
                E.UNSUPPORTED_CONTAINER, f"task {task.id.name}'s pod has {named} beside its primary container "
                f"{primary_container_name(task)!r}; as local processes flytelite runs only the primary container: "
                f"run tasks of type {task.type!r} as pods (plugins: {{{task.type}: kubernetes}})",
                kind=USER, retryable=False)
        argv0 = (list(container.command) + list(container.args))[0]
        if self.flytekit_entrypoint_only and task.type != "python-task" and argv0 not in PYFLYTE_COMMANDS:
            return PluginPhaseInfo.failure(
                E.UNSUPPORTED_CONTAINER, f"task {task.id.name} of type {task.type!r} runs {argv0!r} in image "
                f"{container.image!r}; flytelite runs containers locally only when they run a flytekit "
                "entrypoint (pyflyte-execute)", kind=USER, retryable=False)
        key = tctx.key
        run = f"{key[0]}-{key[1]}-{key[2]}"
        node = _UNSAFE.sub("_", tctx.node_id)
        st.status, st.machine, st.output_prefix = AttemptStatus.LAUNCHING, self.machine, tctx.output_prefix
        st.marker = f"{run}/{node}/{tctx.attempt}"
        st.log_path = str(self.ctx.config.logs_dir / run / f"{node}-{tctx.attempt}.log")
        # Named as its log is: one new folder per attempt, not a node folder and an attempt folder (each a new
        # inode, made in the round that starts the attempt; a map task's every item is a node of its own).
        st.work_dir = str(self.ctx.config.attempts_dir / run / f"{node}-{tctx.attempt}")
        output_dir = self.ctx.blobs.local_file(st.output_prefix)
        # A local store: the output folder made now, nothing of this attempt can be running; found there, an
        # earlier life of the server made it and may have started the process (the next round looks for it).
        fresh = output_dir is not None and _claim_folder(output_dir)
        if fresh or output_dir is None:
            with self._lock:
                self._prepared.add(st.marker)
        if fresh:
            return self._launch(tctx, st)
        # Persisted as "launching" before the next round starts the process.
        return PluginPhaseInfo(PluginPhase.QUEUED, reason="starting a local process", requeue_now=True)

    def _launch(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo:
        with self._lock:
            proc = self._children.get(st.marker)
            prepared_here = st.marker in self._prepared
        if isinstance(proc, WarmAttempt) and proc.pid is None:
            if not proc.lost:
                return self._sent(st, proc)
            with self._lock:
                self._children.pop(st.marker, None)
            self.slots.release(st.marker)
            return self._lost(tctx, st, proc)
        if isinstance(proc, WarmAttempt):
            # Sent by an earlier round, which watched it (_sent or _started); the zygote has said where it runs.
            st.status, st.pid, st.start_time = AttemptStatus.RUNNING, proc.pid, proc.start_time
            return self._check(tctx, st)
        if proc is not None:
            # Started by an earlier round whose status never got persisted.
            return self._started(tctx, st, proc.pid, _start_time(proc), proc)
        if not prepared_here:
            if self._elsewhere(st):
                return self._left_elsewhere(tctx, st)
            # Prepared before a restart: the process may have started just before the crash.
            if (found := self._found(tctx, st)) is not None:
                return found
        if not tctx.may_launch():
            reason = ("waiting for this replica to renew its lease on the execution before starting the "
                      "task's process")
            return PluginPhaseInfo(PluginPhase.QUEUED, reason=reason, poll_after=POLL_SECONDS)
        # Taken first: an attempt waiting for a slot costs a round nothing of what starting it does.
        if not self.slots.take(st.marker, lambda: tctx.wake(None), waiter=tctx.key):
            # A new phase version: the wait is reported once (TaskExecutionEvent QUEUED with this reason).
            return PluginPhaseInfo(PluginPhase.QUEUED, version=ROOM_VERSION, reason=self.slots.reason,
                                   poll_after=POLL_SECONDS)
        try:
            argv, env = self._command(tctx, st)
        except TemplateError as e:
            self.slots.release(st.marker)
            return PluginPhaseInfo.failure(E.BAD_TASK_TEMPLATE, f"task {tctx.task.id.name}: {e}", kind=USER,
                                           retryable=False)
        work_dir = Path(st.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        argv, code_dir = _ensure_dest_dir(argv, work_dir)
        if code_dir is not None:
            env = _importable(env, code_dir)
        Path(st.log_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # A span of the round (the current span) that starts the attempt.
            with self.ctx.tracing.span("launch task process",
                                       attributes={"flyte.task": tctx.task.id.name, "flyte.attempt": st.marker}):
                if self.ctx.tracing.enabled:
                    env = {**env, "TRACEPARENT": self.ctx.tracing.traceparent()}
                proc = self._spawn(argv, env, str(work_dir), st.log_path, self._temp_dir(st.marker))
        except OSError as e:
            self.slots.release(st.marker)
            return PluginPhaseInfo.failure(
                E.PROCESS_START_FAILED, f"could not start {argv[0]!r} for task {tctx.task.id.name}: {e}",
                kind=SYSTEM, retryable=True)
        with self._lock:
            self._children[st.marker] = proc
            self._prepared.discard(st.marker)
        if isinstance(proc, WarmAttempt):
            marker = st.marker
            proc.on_exit(lambda: self.slots.release(marker))
        if proc.pid is None:  # sent to a zygote, which has not said where it runs yet
            wake = self._warm_news(tctx, proc)
            proc.on_start(lambda _: wake())
            proc.on_exit(wake)
            return self._sent(st, proc)
        return self._started(tctx, st, proc.pid, _start_time(proc), proc)

    def _sent(self, st: AttemptState, proc: WarmAttempt) -> PluginPhaseInfo:
        """An attempt sent to a zygote that has not said where it runs (see WarmPool.launch). It counts as
        running, as one given to an idle worker does, unless it waits for a busy worker of its code version
        (WarmAttempt.waits): that one is queued, as a pod waiting to be scheduled is, until it starts. Its status
        stays "launching" until the round the zygote's answer wakes (as a pod's start wakes FlytePropeller), so a
        restart meanwhile looks for its process (by its pid file) before starting it again."""
        if proc.waits:
            return PluginPhaseInfo(PluginPhase.QUEUED, version=HELD_VERSION, logs=self._logs(st),
                                   reason="waiting for a warm worker of its code version")
        return PluginPhaseInfo(PluginPhase.RUNNING, reason="sent to a warm worker", logs=self._logs(st))

    def _found(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo | None:
        """An attempt that may have started unbeknown to this server: its process found running (by its marker,
        or a forked one by its pid file) is adopted; one that ended is judged by its files. None: neither."""
        found = processes.find_by_marker(st.marker) or find_by_pid_file(st.work_dir)
        if found is not None:
            log.info("adopting running task process %s (pid %d)", st.marker, found[0])
            return self._started(tctx, st, found[0], found[1], None)
        if self._has_result(st):
            st.status = AttemptStatus.DONE
            return self._result(tctx, st)
        return None

    def _lost(self, tctx: TaskExecutionContext, st: AttemptState, proc: WarmAttempt) -> PluginPhaseInfo:
        """A warm attempt whose zygote never said where it ran: the zygote could not start it (its error), or
        died first, maybe after it forked: found by its marker or pid file, it is adopted. Otherwise it did not
        start, a retryable system error (as a failed fork)."""
        if proc.error is None and (found := self._found(tctx, st)) is not None:
            return found
        why = proc.error or "its zygote exited before it started the attempt"
        return PluginPhaseInfo.failure(
            E.PROCESS_START_FAILED, f"could not start the process of task {tctx.task.id.name} in a warm worker: "
            f"{why}", kind=SYSTEM, retryable=True, logs=self._logs(st))

    def _spawn(self, argv: list[str], env: dict[str, str], cwd: str, log_path: str, tmp: str):
        if self.warm is not None:
            proc = self.warm.launch(argv, env, cwd, log_path, tmp)
            if proc is not None:
                return proc
        os.makedirs(tmp, exist_ok=True)
        return processes.spawn(argv, {**env, "TMPDIR": tmp}, cwd, log_path)

    def _temp_dir(self, marker: str) -> str:
        """The attempt's own temp folder (TMPDIR; a worker's item gets it as tempfile.tempdir), deleted with its
        other folders: flytekit leaves a sandbox folder with copies of the inputs and outputs in it on every run.
        Short, under the system's temp folder: a unix socket's path is at most 107 bytes, and
        multiprocessing.Manager() puts one two levels below it (a temp folder beside a work folder in
        ~/.flytelite was 86 bytes long, and the Manager failed)."""
        return os.path.join(self._temp_root, hashlib.sha1(marker.encode()).hexdigest()[:16])

    def _ray_dir(self, marker: str) -> str:
        """The attempt's Ray temp folder (RAY_TMPDIR), for a Ray the task starts itself (modin, ray.init()) or the
        compute plugin starts for it: Ray puts unix sockets (at most 107 bytes) three levels below it, which leaves
        it 45 bytes. The attempt's temp folder is too deep, and so may the system's be (TMPDIR): /tmp it is."""
        root = "/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()
        return os.path.join(root, "ray-" + hashlib.sha1(marker.encode()).hexdigest()[:12])

    def _started(self, tctx, st: AttemptState, pid: int, started: int | None, proc) -> PluginPhaseInfo:
        st.status, st.pid, st.start_time = AttemptStatus.RUNNING, pid, started
        if proc is None:
            st.adopted = True
        info = PluginPhaseInfo(PluginPhase.RUNNING, reason=f"running as pid {pid}", logs=self._logs(st))
        if not self._watch(tctx, st, proc):
            info.poll_after = POLL_SECONDS
        return info

    def _watch(self, tctx: TaskExecutionContext, st: AttemptState, proc) -> bool:
        pid, started = st.pid, st.start_time
        assert pid is not None
        if isinstance(proc, WarmAttempt) and not proc.orphaned:
            proc.on_exit(self._warm_news(tctx, proc))  # the zygote reports the exit
            return True
        if self.watcher.is_watching(pid):
            return True

        def on_exit() -> None:
            if proc is not None:
                proc.poll()  # reap our child
            self.slots.release(st.marker)
            tctx.wake(None)

        if self.watcher.watch(pid, started, on_exit):
            return True
        # Already gone (or no pidfd support): the next round sees it.
        if not processes.is_alive(pid, started):
            tctx.wake(None)
            return True
        return False

    def _warm_news(self, tctx: TaskExecutionContext, proc: WarmAttempt) -> Callable[[], None]:
        """What wakes the execution when the zygote says a warm attempt started or ended: at once, unless the
        zygote is backlogged with its group's attempts (ZygoteHandle.backlogged), which the workers take
        without the server. Then the round can wait (up to BATCH_SECONDS, or until news comes with fewer held)
        and take the news of the meantime too: a round per item made a 1,000-item map's rounds 2,000, each
        with a round's fixed cost of reading and writing the execution."""
        return lambda: tctx.wake(BATCH_SECONDS if proc.zygote.backlogged(proc.group) else None)

    def _check(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo:
        with self._lock:
            proc = self._children.get(st.marker)
        if proc is not None and not getattr(proc, "orphaned", False):
            code = proc.poll()
            if code is None:
                return PluginPhaseInfo(PluginPhase.RUNNING, logs=self._logs(st))
            st.exit_code = code
        elif self._elsewhere(st):
            return self._left_elsewhere(tctx, st)
        elif st.pid is not None and processes.is_alive(st.pid, st.start_time):
            info = PluginPhaseInfo(PluginPhase.RUNNING, logs=self._logs(st))
            if not self._watch(tctx, st, None):
                info.poll_after = POLL_SECONDS
            return info
        st.status = AttemptStatus.DONE
        self.slots.release(st.marker)
        return self._result(tctx, st)

    def _elsewhere(self, st: AttemptState) -> bool:
        """Whether the attempt was started on another machine (states from before machines were recorded
        are this machine's)."""
        return st.machine is not None and st.machine != self.machine

    def _left_elsewhere(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo:
        """An attempt a replica on another machine started, taken over here: its files decide; without a
        result its process is out of reach, so the attempt ends as a retryable system error."""
        st.status = AttemptStatus.DONE
        if self._has_result(st):
            return self._result(tctx, st)
        return PluginPhaseInfo.failure(
            E.PROCESS_LOST, f"the task process of this attempt was started on machine {st.machine!r} by a "
            f"replica that stopped driving it; this replica (machine {self.machine!r}) cannot reach it, and it "
            f"wrote no outputs.pb or error.pb to {st.output_prefix}", kind=SYSTEM, retryable=True,
            logs=self._logs(st))

    def _has_result(self, st: AttemptState) -> bool:
        blobs, prefix = self.ctx.blobs, st.output_prefix
        return any(blobs.exists(posixpath.join(prefix, f)) for f in ("outputs.pb", "error.pb", "futures.pb"))

    def _result(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo:
        prefix = st.output_prefix
        logs = self._logs(st)
        written = written_result(self.ctx.blobs, prefix, logs)
        if written is not None:
            return written
        code = st.exit_code
        if code == 0 and not len(tctx.task.interface.outputs.variables):
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
        if code is None:
            how = "ended"
        elif code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        message = f"the task process (pid {st.pid}) {how} without writing outputs.pb or error.pb to {prefix}"
        last = processes.tail(st.log_path).strip()
        if last:
            message += f"; the end of its log:\n{last}"
        return PluginPhaseInfo.failure(E.PROCESS_LOST, message, kind=SYSTEM, retryable=True, logs=logs)

    def abort(self, tctx: TaskExecutionContext) -> None:
        st = AttemptState.load(tctx.state)
        target: tuple[int | None, int | None] | None = None
        with self._lock:
            proc = self._children.get(st.marker)
            prepared_here = st.marker in self._prepared
        if st.status == AttemptStatus.RUNNING and st.pid is not None:
            target = (st.pid, st.start_time)
        elif st.status == AttemptStatus.LAUNCHING:
            # A process may exist that the persisted state does not know of yet (see _launch).
            if getattr(proc, "lost", False):
                proc, prepared_here = None, False  # its zygote died not saying where it ran it (see _lost)
            if proc is not None:
                target = (proc.pid, _start_time(proc))  # pid None: sent, the zygote drops or kills it
            elif not prepared_here:  # a forked attempt has the zygote's environment: only its pid file names it
                target = processes.find_by_marker(st.marker) or find_by_pid_file(st.work_dir)
        if target is not None and self._elsewhere(st):
            log.warning("cannot stop the task process of %s: it runs on machine %r, not this one (%r)",
                        st.marker, st.machine, self.machine)
        elif target is not None:
            pid, started = target
            if self._kill(proc, pid, started, signal.SIGTERM) and self._loop is not None:
                self._loop.call_soon_threadsafe(
                    self._loop.call_later, KILL_GRACE_SECONDS, self._kill, proc, pid, started, signal.SIGKILL)
        if st.status in (AttemptStatus.LAUNCHING, AttemptStatus.RUNNING):
            st.status = AttemptStatus.ABORTED
            st.store(tctx.state)
        with self._lock:
            self._prepared.discard(st.marker)
        if target is None:
            self.slots.release(st.marker)  # one whose process is signalled frees its slot once it exited

    def _kill(self, proc, pid: int | None, started: int | None, sig: int) -> bool:
        # A warm attempt's zygote holds it unreaped until it exits: its kill cannot hit a recycled pid, nor a
        # sibling map item that the attempt's worker runs once this attempt ended (its pid stays alive).
        if isinstance(proc, WarmAttempt) and proc.kill(sig):
            return True
        return pid is not None and processes.kill_group(pid, started, sig)

    def finalize(self, tctx: TaskExecutionContext) -> None:
        st = AttemptState.load(tctx.state)
        if st.status in (None, AttemptStatus.LAUNCHING, AttemptStatus.RUNNING):
            return
        with self._lock:
            proc = self._children.pop(st.marker, None)
        if proc is not None:
            proc.poll()
        self.slots.release(st.marker)
        if st.work_dir:
            self._discard(st.work_dir)
            self._discard(scratch_dir(st.work_dir))
            self._discard(self._temp_dir(st.marker))
            self._discard(self._ray_dir(st.marker))

    def _discard(self, path: str) -> None:
        """Delete a folder in the background: deleting an attempt's unpacked code in the round delayed the next
        node by milliseconds per task, and moving it aside first cost the round a rename."""
        with self._lock:
            self._doomed.append(path)
            if self._sweep_queued:
                return
            self._sweep_queued = True
        try:
            self._cleaner.submit(self._sweep)
        except RuntimeError:  # closed: close() moved it into the trash, deleted after the next start
            pass

    def _sweep(self) -> None:
        """Delete the folders handed over so far (in the cleaner thread)."""
        if self._closing.wait(SWEEP_DELAY_SECONDS):
            return  # close() moves them into the trash
        with self._lock:
            doomed, self._doomed = self._doomed, []
            self._sweep_queued = False  # a folder handed over from now on queues the next sweep
        _delete(doomed)
        if self._closing.is_set():
            _remove_if_empty(self._temp_root)  # close() found this sweep's folders still there

    # -- the command -----------------------------------------------------------------------
    def _command(self, tctx: TaskExecutionContext, st: AttemptState) -> tuple[list[str], dict[str, str]]:
        container = tctx.container
        argv = rendered_command(tctx)
        interpreter = self.ctx.config.interpreter_for(container.image)
        bin_dir = os.path.dirname(interpreter)
        if argv[0] in PYFLYTE_COMMANDS:
            # Console scripts are flytekit.bin.entrypoint's click commands: run them with the image's interpreter.
            argv = [interpreter, "-m", "flytekit.bin.entrypoint", *argv]
        elif PYTHON_NAMES.match(argv[0]):
            argv = [interpreter, *argv[1:]]
        elif not os.path.isabs(argv[0]) and os.path.exists(os.path.join(bin_dir, argv[0])):
            argv = [os.path.join(bin_dir, argv[0]), *argv[1:]]
        return argv, self._environment(tctx, st, bin_dir)

    def _environment(self, tctx: TaskExecutionContext, st: AttemptState, bin_dir: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(flyte_task_env(tctx, self.ctx))
        env.update({
            "PYTHONUNBUFFERED": "1",
            processes.MARKER_ENV: st.marker,
            IMAGE_ENV: tctx.container.image,
        })
        env.setdefault("RAY_TMPDIR", self._ray_dir(st.marker))
        # pyflyte-fast-execute starts `pyflyte-execute` through PATH: it must be the image's one.
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        return task_process_env(env)

    def _logs(self, st: AttemptState) -> list[execution_pb2.TaskLog]:
        path = Path(st.log_path)
        try:
            rel = path.relative_to(self.ctx.config.logs_dir).as_posix()
        except ValueError:
            return []
        return [execution_pb2.TaskLog(uri=f"{self.ctx.public_url}/logs/{rel}", name="Task log (local process)")]


def _start_time(proc) -> int | None:
    if proc.pid is None:  # a warm attempt its zygote has not started yet
        return None
    return getattr(proc, "start_time", None) or processes.start_time(proc.pid)


def _claim_folder(path: str) -> bool:
    """Create the folder (and its missing parents); False if it was there already."""
    try:
        os.mkdir(path)
    except FileExistsError:
        return False
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.mkdir(path)
        except FileExistsError:
            return False
    return True


def _ensure_dest_dir(argv: list[str], work_dir: Path) -> tuple[list[str], Path | None]:
    """`--dest-dir` (where the code tarball is unpacked) must exist, and must be this attempt's own; the
    command, and the folder (None: the command unpacks no code).

    A relative one (flytekit's default is `.`) already is, as the attempt runs in its own folder; it
    stays as written, because flytekit serializes it into what a running task registers (an eager
    workflow's tasks), which must equal what `pyflyte register` registered from outside.
    """
    argv = list(argv)
    for i, arg in enumerate(argv[:-1]):
        if arg == "--dest-dir":
            dest = argv[i + 1]
            if os.path.isabs(dest):
                # An absolute dest dir would be shared by every attempt (and code version): keep it per attempt.
                path = work_dir / "code"
                argv[i + 1] = str(path)
            else:
                path = work_dir / dest
            if path != work_dir:  # flytekit's default, ".", is the attempt's folder, made already
                path.mkdir(parents=True, exist_ok=True)
            return argv, path.resolve()
    return argv, None


def _importable(env: dict[str, str], code_dir: Path) -> dict[str, str]:
    """`env` with the unpacked code on PYTHONPATH, as Flyte's default images have their workdir (where the code
    is unpacked) and as newer flytekit's fast-execute adds it itself: older flytekit's inner
    `pyflyte-execute`, a console script, would not find the task's module otherwise."""
    current = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": f"{current}{os.pathsep}{code_dir}" if current else str(code_dir)}


def _empty(folder: Path) -> None:
    """Delete what is in `folder` (the trash: what an earlier life of the server did not get to delete)."""
    try:
        left = list(folder.iterdir())
    except OSError:
        return
    for path in left:
        shutil.rmtree(path, ignore_errors=True)


def _delete(paths: list[str]) -> None:
    """Delete folders with rm(1): shutil.rmtree runs Python between its system calls, holding the GIL the
    engine's rounds wait for; rm deletes beside them, in a process of its own."""
    rm = shutil.which("rm")
    if rm is None:
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)
        return
    for start in range(0, len(paths), 500):
        subprocess.run([rm, "-rf", "--", *paths[start:start + 500]], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _remove_if_empty(folder: str) -> None:
    """Delete `folder` if it is empty (the attempts' temp root: an attempt still running keeps it)."""
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _move_to_trash(path: str, trash: Path) -> None:
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(path, trash / uuid.uuid4().hex)
    except OSError:
        pass  # gone already (or never made)


def _lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority: deleting finished attempts' folders (a few ms of
    file system calls each) then takes only CPU that running tasks and the engine leave idle."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        pass
