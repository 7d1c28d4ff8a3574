"""The zygote: a pre-imported, thread-free Python process that forks the processes task attempts run in.

Run as a script by a task environment's interpreter
(`python zygote.py <fd> <queue seconds> <processors> <short seconds> <max processes>`),
so it needs only the standard library and flytekit, never flytelite. It imports
`flytekit.bin.entrypoint` once and forks one child per attempt (child.py says what a child does).
Requests with the same "group" (the tasks of one code version; the items of its map tasks) are served by
workers: a child that ran one and ended it cleanly waits for the next. The zygote offers such an idle worker
to the server (its Exit says `idle`), and from then on only the server gives it work: a Run naming the
worker, which the server counts as started at once (no Started answer comes), or a Retire once it was
idle for the server's idle seconds. A worker that is gone while offered is reported by an Exit without
`idle`; a Run for it that crossed that Exit is dropped, as the Exit already ended its attempt at the server.

With <queue seconds> above 0 (engine.warm_queue_seconds; 0 is off), while the group has at least as many
busy workers as there are <processors> (0: the processors the zygote may run on), a request waits (up to
<queue seconds>) for one of them to finish its item instead of getting a new process: many more processes
than processors running short Python items cost each item more CPU time (a process switched to finds the
caches cold), and the worker that finishes takes the waiting request at once, without a round
trip to the server. A busy worker runs an item, or was offered to the server, less than <short seconds> ago:
an item that runs longer computes or sleeps for a while, and is not worth waiting for, so the requests
waiting for it get processes of their own then, as do those still waiting at their deadline. A waiting
attempt has not started: the server, which does not wait for it, hears where it runs (Started) once it
does; a zygote that exits (the server is gone) drops what waits, which a restarted server starts again, and
a Kill drops it (answered by a Failed with the signal).
With <max processes> above 0 (the server's task slots), the zygote never has more children than that: a
request that needs a process while there are as many waits, and an idle worker offered to the server is
retired to make room (reported by an Exit whose code is None: a Run for it that crossed that Exit never ran).
The zygote must never start threads, open gRPC channels, do flytekit I/O or import user
code: all of that would be shared by (or broken in) every child.

What the zygote imported (and flytekit decided at import: `lazy_module` placeholders for packages it
did not find, sys.path from .pth files) is only true of the environment as it was. So the first thing
it does is note the modification times of the folders installers write to (site-packages, user site)
and report them when ready: the server compares them before each attempt and, when a package was
installed or removed, sends "drain" and starts a new zygote. A draining zygote forks nothing more (but
what waited for a worker when the drain came), retires its idle workers and exits once its last child is
reaped (their exits are still reported).

Protocol: messages.py's, over the inherited unix socket <fd> (Run, Kill, Retire and Drain in; Ready, Started,
Failed and Exit out) and over a socket pair with each worker (Run to it, Done from it). A worker's item
that ends cleanly is reported as an exit with code 0 while its process lives on.
The zygote exits when the server's end of the socket closes; running children keep running (a
restarted server adopts them by the pid it persisted or by the one recorded with their working folder);
workers then end after their item.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import selectors
import signal
import site
import socket
import sys
import sysconfig
import time
import traceback
from typing import TYPE_CHECKING

HERE = os.path.dirname(os.path.abspath(__file__))
# The script's own folder is not a place user code or flytekit is imported from.
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    del sys.path[0]


def _site_dirs() -> dict[str, int | None]:
    """The folders packages are installed into, with their mtimes (None: missing). Installing or removing a
    package adds or removes a folder (its dist-info) in one of them, which changes that folder's mtime."""
    # (Environments made by virtualenv before 20 have a site module of their own, without getsitepackages.)
    dirs = {*getattr(site, "getsitepackages", list)(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    if site.ENABLE_USER_SITE:
        dirs.add(site.getusersitepackages())  # on sys.path only if it existed now: watched even if missing
    seen: dict[str, int | None] = {}
    for path in sorted(dirs):
        try:
            seen[path] = os.stat(path).st_mtime_ns
        except OSError:
            seen[path] = None
    return seen


# Noted before anything is imported from them: a change made while flytekit imports is seen as a change.
SITE_DIRS = _site_dirs()

# OpenBLAS (numpy's) starts a pool of threads when it loads, and flytekit loads the installed plugins at import
# (flytekitplugins-spark's imports numpy): with one thread the zygote stays fork-safe. Each worker sets the pool
# its attempt's environment asks for (child.py, restore_blas_threads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Likewise pyarrow's jemalloc starts a background thread when it loads, and some flytekit releases import pyarrow
# when they register their type transformers (_warm_caches). Children set their own environment; the allocator
# they inherit purges its memory on its allocation paths instead.
os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")

# Imported once here so that children do not each import them (what a pyflyte-execute run needs).
import flytekit.core.python_auto_container  # noqa: E402,F401  (after the sys.path fix above)


def _load(name: str):
    """A module of this folder, under a name no user module has (the folder is not on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"_flytelite_warm_{name}", os.path.join(HERE, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from flytelite.plugins.local.workers import messages
else:
    messages = _load("messages")  # first: child.py finds it loaded
child = _load("child")


class Worker:
    """A child serving one group's items over its control socket (None once retired)."""

    def __init__(self, pid: int, sock: socket.socket, group: str | None, started: int | None):
        self.pid, self.group, self.start_time = pid, group, started
        # When its item started, or it was offered to the server (time.monotonic).
        self.since = time.monotonic()
        self.sock: socket.socket | None = sock
        self.lines = messages.Lines()
        # Offered to the server as idle (its Exit said so): only the server's Run or Retire may take it.
        self.offered = False


class Zygote:
    def __init__(self, sock: socket.socket, queue_seconds: float = 0.0, processors: int = 0,
                 short_seconds: float = 0.1, max_children: int = 0):
        self.sock = sock
        # At most this many unreaped children (0: no limit).
        self.max_children = max_children
        # What the control socket did not take yet, written when it has room: the zygote never blocks writing
        # its news, so it always reads the server's requests (a server thread may be blocked writing them).
        sock.setblocking(False)
        self.out = bytearray()
        self.queue_seconds = queue_seconds
        # A worker counts as busy for the queue while its item (or its offer to the server) is younger than this.
        self.short_seconds = short_seconds
        self.processors = processors or len(os.sched_getaffinity(0))
        # Requests waiting for a busy worker of their group, or for room (max_children), in arrival order:
        # (deadline, request).
        self.queue: list[tuple[float, messages.Run]] = []
        self.lines = messages.Lines()
        # Unreaped children: pid -> the request id running in it (None: an idle or retired worker).
        self.running: dict[int, int | None] = {}
        self.workers: dict[int, Worker] = {}
        self.selector = selectors.DefaultSelector()
        # Set by "drain": fork nothing more (the server sends no more runs), exit once every child is reaped.
        self.draining = False
        # SIGCHLD wakes the select loop through a self-pipe; children are reaped there, not in the handler.
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector.register(sock, selectors.EVENT_READ, "control")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "sigchld")

    def send(self, message: messages.Message) -> None:
        data = messages.encode(message)
        if not self.out:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
            self.selector.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, "control")
        self.out += data

    def flush(self) -> None:
        """Write what the control socket takes of what waits to be written."""
        try:
            sent = self.sock.send(self.out)
        except BlockingIOError:
            return
        del self.out[:sent]
        if not self.out:
            self.selector.modify(self.sock, selectors.EVENT_READ, "control")

    def serve(self) -> None:
        import flytekit

        self.send(messages.Ready(pid=os.getpid(), flytekit=flytekit.__version__, flytekit_file=flytekit.__file__,
                                 python=sys.version, threads=_native_threads(), site_dirs=SITE_DIRS))
        while not (self.draining and not self.running):
            for key, mask in self.selector.select(self.timeout()):
                if key.data == "sigchld":
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                elif key.data == "control":
                    if mask & selectors.EVENT_WRITE:
                        self.flush()
                    if mask & selectors.EVENT_READ and not self.read_requests():
                        return
                else:
                    self.read_worker(key.data)
            self.serve_queue()
        # Drained: the last exits are written before the zygote exits (the server's reader always reads).
        try:
            self.sock.setblocking(True)
            self.sock.sendall(self.out)
        except OSError:
            pass  # the server is gone

    def read_requests(self) -> bool:
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return True
        if not data:
            return False  # the server is gone
        for line in self.lines.split(data):
            request = messages.decode(line)
            if isinstance(request, messages.Run):
                self.run(request, line)
            elif isinstance(request, messages.Retire):
                worker = self.workers.get(request.pid)
                if worker is not None and worker.offered:
                    self.withdraw(worker)
            elif isinstance(request, messages.Drain):
                self.draining = True
                self.serve_queue()  # accepted before the drain: they run, as they would have
                for worker in list(self.workers.values()):
                    if self.idle(worker):
                        self.withdraw(worker)
            elif isinstance(request, messages.Kill):
                self.kill(request)
        return True

    def kill(self, request: messages.Kill) -> None:
        """Drop the attempt if it waits for a worker; else signal the process that runs it. Only an unreaped
        child (its pid cannot have been given to another process), and only while it still runs that attempt
        (a worker may have gone on to a sibling item)."""
        for i, (_, queued) in enumerate(self.queue):
            if queued.id == request.id:
                del self.queue[i]
                self.send(messages.Failed(id=request.id, error=f"dropped by signal {request.sig} before it started",
                                          signal=request.sig))
                return
        pid = request.pid
        if pid is None:  # sent before the server heard where it runs
            pid = next((p for p, running in self.running.items() if running == request.id), None)
        if pid is not None and self.running.get(pid) == request.id:
            kill_group(pid, request.sig)

    def run(self, request: messages.Run, line: bytes) -> None:
        group = request.group
        if request.worker is not None:
            self.run_in_worker(request, request.worker, line)
        elif (group and self.queue_seconds > 0 and self.busy_workers(group, time.monotonic()) >= self.processors
              or self.full()):
            self.queue.append((time.monotonic() + self.queue_seconds, request))  # served by serve_queue
        else:
            self.fork(request, group)

    def full(self) -> bool:
        """As many children as max_children: a request that needs a process waits (retiring ones count)."""
        return bool(self.max_children) and len(self.running) >= self.max_children

    def make_room(self, waiting: int) -> None:
        """Retire the workers offered to the server that were idle longest, one per request waiting for room
        beyond the children already ending. Their Exit says so at once: the server gives them nothing more."""
        ending = sum(1 for pid in self.running if pid in self.workers and self.workers[pid].sock is None)
        offered = sorted((w for w in self.workers.values() if w.offered and w.sock is not None),
                         key=lambda w: w.since)
        for worker in offered[:max(0, waiting - ending)]:
            self.withdraw(worker)
            self.send(messages.Exit(pid=worker.pid, code=None))

    def run_in_worker(self, request: messages.Run, pid: int, line: bytes) -> None:
        """The server chose an idle worker we offered; it counts the attempt as started there. The request goes
        on as it came (`line`, without its newline)."""
        worker = self.workers.get(pid)
        if worker is None or worker.start_time != request.worker_start or not worker.offered:
            return  # it was gone first: the Exit that said so ended this attempt at the server
        worker.offered, worker.since = False, time.monotonic()
        self.running[worker.pid] = request.id
        try:
            if worker.sock is None:
                raise OSError("the worker is ending")
            worker.sock.sendall(line + b"\n")
        except OSError:
            self.retire(worker)  # its exit, reaped soon, is reported as this attempt's
            return
        # After the worker has it, off the attempt's way: a server that crashes before it persisted the pid still
        # finds the worker by this record.
        _record_pid(request, worker.pid, worker.start_time)

    def busy(self, worker: Worker, now: float) -> bool:
        """Running an item that started less than <short seconds> ago (it takes the next waiting request when
        done; one that runs longer computes or sleeps for a while, and waiting for it is not worth what a process
        costs), or offered to the server as recently: its Run for the worker may be on its way (counted free, a
        worker between two items made a new process for a request that crossed that Run)."""
        return (worker.sock is not None and now - worker.since < self.short_seconds
                and (worker.offered or self.running.get(worker.pid) is not None))

    def busy_workers(self, group: str | None, now: float) -> int:
        return sum(1 for w in self.workers.values() if w.group == group and self.busy(w, now))

    def queued(self, group: str | None) -> messages.Run | None:
        """The oldest request of the group waiting for a busy worker, taken off the queue."""
        for i, (_, request) in enumerate(self.queue):
            if request.group == group:
                del self.queue[i]
                return request
        return None

    def serve_queue(self) -> None:
        """Requests that waited their time (all of them once draining), and those whose group has fewer busy
        workers than processors by now (its items ran long, or its workers ended), get processes of their own
        while there is room (max_children); those left without room make some."""
        if not self.queue:
            return
        now = time.monotonic()
        busy: dict[str | None, int] = {}
        waiting = []
        without_room = 0
        for deadline, request in self.queue:
            group = request.group
            if group not in busy:
                busy[group] = self.busy_workers(group, now)
            if not (self.draining or deadline <= now or busy[group] < self.processors):
                waiting.append((deadline, request))
            elif self.full():
                waiting.append((deadline, request))
                without_room += 1
            else:
                self.fork(request, group)
                busy[group] += 1
        self.queue = waiting
        if without_room:
            self.make_room(without_room)

    def hand_over(self, worker: Worker, request: messages.Run) -> None:
        """Give a request that waited for its group's busy worker to that worker, just done with its item."""
        try:
            assert worker.sock is not None  # it just said Done
            worker.sock.sendall(messages.encode(request))
        except OSError:
            self.retire(worker)  # it is ending: the item gets a process of its own
            self.queue.insert(0, (time.monotonic(), request))
            return
        self.running[worker.pid], worker.since = request.id, time.monotonic()
        self.send(messages.Started(id=request.id, pid=worker.pid, start_time=worker.start_time, reused=True))
        # Before anything else: a server that crashes before it persisted the pid still finds the worker by this
        # record (the zygote outlives it).
        _record_pid(request, worker.pid, worker.start_time)

    def fork(self, request: messages.Run, group: str | None) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        # The child closes its end once it leads its own session: only then is the attempt reported
        # started, so a kill of its process group right after cannot miss it.
        session_r, session_w = os.pipe()
        ours, theirs = socket.socketpair() if group else (None, None)
        try:
            pid = os.fork()
        except OSError as e:
            for fd in (session_r, session_w):
                os.close(fd)
            for end in (ours, theirs):
                if end is not None:
                    end.close()
            self.send(messages.Failed(id=request.id, error=f"fork failed: {e}"))
            return
        if pid == 0:
            code = 1
            try:
                os.close(session_r)
                self.become_child()
                if ours is not None and theirs is not None:  # a worker of its group
                    ours.close()
                    code = child.serve_items(request, session_w, theirs)
                else:
                    code = child.run_attempt(request, session_w)
            except BaseException:  # noqa: BLE001 - said in the log it writes to, then the exit code says it
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(session_w)
        os.read(session_r, 1)  # EOF once the child called setsid (or died)
        os.close(session_r)
        self.running[pid] = request.id
        # Read while the child cannot have been reaped yet (it is ours until reap() runs). The pid is
        # recorded before the server hears of it: a server that crashes now finds the child by that record.
        started = child.start_time(pid)
        if ours is not None and theirs is not None:
            theirs.close()
            self.workers[pid] = Worker(pid, ours, group, started)
            self.selector.register(ours, selectors.EVENT_READ, self.workers[pid])
        _record_pid(request, pid, started)
        self.send(messages.Started(id=request.id, pid=pid, start_time=started, reused=False))

    def become_child(self) -> None:
        """Drop what is the zygote's own: the control socket, the workers' sockets, the SIGCHLD plumbing."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.selector.close()
        self.sock.close()
        for worker in self.workers.values():
            if worker.sock is not None:
                worker.sock.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def read_worker(self, worker: Worker) -> None:
        if worker.sock is None:
            return  # retired earlier in the same round of events (its exit was reaped first)
        try:
            data = worker.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.retire(worker)  # it is ending; its exit (and its item's, if any) comes with reap()
            return
        for message in worker.lines.feed(data):
            if isinstance(message, messages.Done) and message.id == self.running.get(worker.pid):
                self.running[worker.pid] = None
                queued = self.queued(worker.group)
                worker.offered, worker.since = queued is None and not self.draining, time.monotonic()
                self.send(messages.Exit(pid=worker.pid, code=0, idle=worker.offered))
                if queued is not None:
                    self.hand_over(worker, queued)
                elif self.draining:
                    self.retire(worker)

    def idle(self, worker: Worker) -> bool:
        """Waiting for an item: not retired, and not running one."""
        return worker.sock is not None and self.running.get(worker.pid) is None

    def timeout(self) -> float | None:
        """Until the oldest waiting request's deadline, or until a busy worker of a waiting request's group
        stops counting as busy (None: none waits, or they wait for room, which a child's exit or a worker's
        Done makes)."""
        if not self.queue or self.full():
            return None
        now = time.monotonic()
        groups = {request.group for _, request in self.queue}
        ends = [w.since + self.short_seconds for w in self.workers.values()
                if w.group in groups and self.busy(w, now)]
        return max(0.0, min(self.queue[0][0], *ends) - now)

    def withdraw(self, worker: Worker) -> None:
        """Retire an idle worker the server gave up (Retire) or a drain ends: its exit is not reported."""
        worker.offered = False
        self.retire(worker)

    def retire(self, worker: Worker) -> None:
        """Close its socket: an idle worker exits at once, a busy one after its item."""
        if worker.sock is not None:
            self.selector.unregister(worker.sock)
            worker.sock.close()
            worker.sock = None

    def reap(self) -> None:
        while self.running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            item = self.running.pop(pid, None)
            worker = self.workers.pop(pid, None)
            if worker is not None:
                self.retire(worker)
            if item is not None or (worker is not None and worker.offered):
                self.send(messages.Exit(pid=pid, code=os.waitstatus_to_exitcode(status)))


def _record_pid(request: messages.Run, pid: int, started: int | None) -> None:
    try:
        child.record_pid(request, pid, started)
    except OSError as e:
        print(f"zygote: could not write {request.pid_file}: {e}", file=sys.stderr)


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


def _warm_caches() -> None:
    """Pure computation every task load repeats, done once here so that every child finds it done:
    - flytekit parses each task's docstring with regexes that docstring_parser compiles on first use;
    - flytekit registers the type transformers of libraries already imported (pandas and numpy, which
      installed plugins import with flytekit) at its first conversion. A worker whose item registered them
      would find flytekit's registries changed and end (child.py), so each item would get a new worker."""
    import docstring_parser
    from flytekit.core.type_engine import TypeEngine

    docstring_parser.parse("Summary.\n\nArgs:\n    x: a value\n\nReturns:\n    a value\n")
    TypeEngine.lazy_import_transformers()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    zygote = Zygote(sock, float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                    int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    _warm_caches()
    # What children inherit from the zygote should not be scanned or copied by each child's collector.
    gc.collect()
    gc.freeze()
    zygote.serve()


if __name__ == "__main__":
    main()
