"""The local-process plugin: runs each attempt of a task as a process on this machine.

What the process is (its command, how its result is read, its logs) is a TaskProcess's
(machinery/process.py): flytekit's entrypoint by default (flytekit.py), raw containers' commands
(plugins/container.py), the compute engines' launchers (plugins/compute). This plugin owns the rest. Each
attempt runs in its own working directory and temp folder with its own log file. An attempt starts its
process only holding a task slot (machinery/slots.py, shared by every plugin whose processes run on this
machine): the others wait in QUEUED, as pods wait for room on a node. The process is forked from a warm
zygote when the TaskProcess allows it and it can be (warm.py), else started cold (cold.py).

Durability: an attempt is recorded as "launching", then started; the pid and its start time are
recorded so that after a restart a live process is adopted and waited for, and a dead one is judged by
the files it left. With a remote blob store the "launching" record is persisted by the engine before
the next round starts the process. With a local one the attempt starts in the round that prepares it:
the prepare first creates the attempt's working folder, so a prepare that finds that folder, or the
output folder the task makes, knows an earlier life of the server may have started the process, and looks
for it (or its outputs) before starting one. An attempt sent to a warm zygote stays "launching" until the
zygote says which process runs it (see WarmPool.launch); a restart meanwhile finds that process by the
pid the zygote recorded with its working folder. The machine is recorded too: a replica that takes over an
attempt started on another machine cannot see its process, so it judges the attempt by its files at once
(no result: a retryable system error).
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import signal
import subprocess
import threading
from pathlib import Path

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.metrics import OWN
from flytelite.plugins.local import cold, folders, warm
from flytelite.plugins.local.cleaner import FolderCleaner
from flytelite.plugins.local.flytekit import FlytekitProcess
from flytelite.plugins.local.state import ROOM_VERSION, AttemptState, AttemptStatus
from flytelite.plugins.local.workers.pool import WarmAttempt, find_by_recorded_pid, pid_file
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import Plugin, PluginPhase, PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt, TaskProcess
from flytelite.plugins.machinery.slots import TaskSlots, machine_slots
from flytelite.plugins.machinery.target import other_containers, primary_container_name
from flytelite.plugins.machinery.template import TemplateError

log = logging.getLogger(__name__)

# Seconds between SIGTERM and SIGKILL when a task is aborted or times out.
KILL_GRACE_SECONDS = 3.0
# Poll interval for a process we cannot get exit notifications for.
POLL_SECONDS = 1.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class LocalProcessPlugin(Plugin):
    def __init__(self, ctx: Context, process: TaskProcess | None = None, shares_with: LocalProcessPlugin | None = None):
        """Runs the attempts of `process`'s task types (default: flytekit's entrypoint). `shares_with`: the plugin
        whose task slots and folder cleaner this one shares, its processes running on the same machine (None:
        this one has its own)."""
        self.ctx = ctx
        self.process = process or FlytekitProcess(ctx)
        self.id, self.task_types, self.is_default = self.process.id, self.process.task_types, self.process.is_default
        self.machine = ctx.config.engine.machine
        self.watcher = processes.ExitWatcher()
        self._loop = None
        self._lock = threading.Lock()
        # Attempts this server prepared but has not started: safe to start without looking for a process.
        self._prepared: set[str] = set()
        # Processes this server started (our children, so we reap them), by attempt marker.
        self._children: dict[str, subprocess.Popen | WarmAttempt] = {}
        # Attempts' temp folders (see folders.temp_dir).
        self._temp_root = folders.temp_root(ctx.config.attempts_dir)
        self._owns_machine = shares_with is None
        self.slots: TaskSlots
        self.cleaner: FolderCleaner
        if shares_with is not None:
            self.slots, self.cleaner = shares_with.slots, shares_with.cleaner
        else:
            # Each attempt holds one (by its marker) from before its process starts until it is known to have
            # ended.
            self.slots = TaskSlots(ctx.config.engine.max_task_processes or machine_slots())
            ctx.metrics.gauge(f"{OWN}task_slots:size", "Task processes this machine runs at once",
                              lambda: self.slots.size)
            ctx.metrics.gauge(f"{OWN}task_slots:in_use", "Task slots held by attempts", self.slots.in_use)
            # Finished attempts' folders, deleted in the background while no task runs (cleaner.py).
            self.cleaner = FolderCleaner(ctx.config.attempts_dir / ".trash", self._temp_root,
                                         busy=lambda: self.slots.in_use() > 0, prefixes=(folders.ray_prefix(),),
                                         machine=self.machine)
        # Attempts forked from a zygote when they can be (see plugins/local/workers); the others run cold.
        self.warm = warm.warm_pool(ctx, self._temp_root, self.slots.size) if self.process.forks_warm else None

    def capacity(self) -> int | None:
        return self.slots.size

    def setup(self, loop) -> None:
        self._loop = loop
        self.watcher.bind(loop)
        if self._owns_machine:
            self.cleaner.start()
        if self.warm is not None:
            self.warm.prestart(self.ctx.config.interpreter_for(""))

    def close(self) -> None:
        self.watcher.close()
        if self.warm is not None:
            self.warm.close()
        if self._owns_machine:
            self.cleaner.close()

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
        refused = self.process.refuse(tctx)
        if refused is not None:
            return refused
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
        # A local store: the working folder made now and no output folder there, nothing of this attempt can
        # be running (see the module's docstring). The output folder is the task's to make.
        fresh = (output_dir is not None and not os.path.exists(output_dir)
                 and folders.claim_folder(st.work_dir))
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
                return warm.sent(proc, self._logs(st))
            with self._lock:
                self._children.pop(st.marker, None)
            self.slots.release(st.marker)
            return self._lost(tctx, st, proc)
        if isinstance(proc, WarmAttempt):
            # Sent by an earlier round, which watched it (warm.sent or _started); the zygote has said where it runs.
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
                                   poll_after=POLL_SECONDS, no_room=True)
        try:
            argv, env = self.process.command(tctx, self._attempt(st))
        except TemplateError as e:
            self.slots.release(st.marker)
            return PluginPhaseInfo.failure(E.BAD_TASK_TEMPLATE, f"task {tctx.task.id.name}: {e}", kind=USER,
                                           retryable=False)
        work_dir = Path(st.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        argv, code_dir = folders.ensure_dest_dir(argv, work_dir)
        if code_dir is not None:
            env = folders.importable(env, code_dir)
        Path(st.log_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # A span of the round (the current span) that starts the attempt.
            with self.ctx.tracing.span("launch task process",
                                       attributes={"flyte.task": tctx.task.id.name, "flyte.attempt": st.marker}):
                if self.ctx.tracing.enabled:
                    env = {**env, "TRACEPARENT": self.ctx.tracing.traceparent()}
                proc = self._spawn(argv, env, str(work_dir), st.log_path, folders.temp_dir(self._temp_root, st.marker))
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
            wake = warm.news(tctx, proc)
            proc.on_start(lambda _: wake())
            proc.on_exit(wake)
            return warm.sent(proc, self._logs(st))
        return self._started(tctx, st, proc.pid, _start_time(proc), proc)

    def _found(self, tctx: TaskExecutionContext, st: AttemptState) -> PluginPhaseInfo | None:
        """An attempt that may have started unbeknown to this server: its process found running (by its marker,
        or a forked one by its recorded pid) is adopted; one that ended is judged by its files. None: neither."""
        found = processes.find_by_marker(st.marker) or find_by_recorded_pid(st.work_dir)
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
        return warm.not_started(tctx.task.id.name, proc, self._logs(st))

    def _spawn(self, argv: list[str], env: dict[str, str], cwd: str, log_path: str, tmp: str):
        if self.warm is not None:
            proc = self.warm.launch(argv, env, cwd, log_path, tmp)
            if proc is not None:
                return proc
        return cold.spawn(argv, env, cwd, log_path, tmp)

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
            proc.on_exit(warm.news(tctx, proc))  # the zygote reports the exit
            return True

        def on_exit() -> None:
            if proc is not None:
                proc.poll()  # reap our child
            self.slots.release(st.marker)
            tctx.wake(None)

        return cold.watch(self.watcher, pid, started, on_exit, lambda: tctx.wake(None))

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
        return self.process.result(tctx, self._attempt(st))

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
                target = processes.find_by_marker(st.marker) or find_by_recorded_pid(st.work_dir)
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

    def waits_on_others(self, tctx: TaskExecutionContext, waiting: bool) -> None:
        marker = AttemptState.load(tctx.state).marker
        if marker:
            (self.slots.lend if waiting else self.slots.reclaim)(marker)

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
            attempt = self._attempt(st)
            self.cleaner.discard(st.work_dir, pid_file(st.work_dir), attempt.temp_dir, attempt.ray_dir)
            if st.marker and not self._elsewhere(st):
                self.process.ended(attempt)

    def _attempt(self, st: AttemptState) -> Attempt:
        return Attempt(marker=st.marker, work_dir=st.work_dir, log_path=st.log_path,
                       temp_dir=folders.temp_dir(self._temp_root, st.marker), ray_dir=folders.ray_dir(st.marker),
                       output_prefix=st.output_prefix, pid=st.pid, exit_code=st.exit_code)

    def _logs(self, st: AttemptState):
        return self.process.logs(self._attempt(st))


def _start_time(proc) -> int | None:
    if proc.pid is None:  # a warm attempt its zygote has not started yet
        return None
    return getattr(proc, "start_time", None) or processes.start_time(proc.pid)
