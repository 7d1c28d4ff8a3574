"""What runs in a process forked from the zygote: one task attempt, or several one after another.

Loaded by zygote.py (standard library and flytekit only, never flytelite) before it forks anything.
An attempt does what `pyflyte-fast-execute … -- pyflyte-execute …` does in a fresh process, minus the
interpreter start and the imports.

Attempts of one group share a *worker*: a forked child that runs an attempt, cleans up and waits for the
next one instead of exiting. A group is the attempts of one pyflyte command (`pyflyte-execute`, or
`pyflyte-map-execute` for map items) for any task of one code version, in any execution: the same command
but for the attempt's inputs, paths and the task it names (see pool.worker_group). Each attempt (an "item"
below) gets what a fresh process would give it: its own environment, working directory, temp folder, log
file, random seed, flytekit context, root logger and warnings filters, and a fresh import of the task's code
(the modules it imported from outside the interpreter's installation are removed after it; installed
packages stay imported, as the zygote's own imports do; flytekit's registries of launch plans and entities
are put back as they were). A worker is reused only when an item ended as a clean process would (exit code
0, no thread or atexit hook left behind, flytekit's type registries untouched); otherwise the worker ends
there as the attempt's process, exactly like a one-attempt child, and the next item gets a new one.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.machinery
import io
import logging
import os
import socket
import sys
import tarfile
import tempfile
import threading
import traceback
import types
import warnings
import weakref
import zlib
from typing import TYPE_CHECKING

import flytekit
import flytekit.interfaces.random
import flytekit.loggers
from flytekit.bin import entrypoint

if TYPE_CHECKING:
    from flytelite.plugins.local.workers import messages
else:
    # In a task's interpreter flytelite is not importable: the zygote loaded the module by its path before
    # this one (zygote._load). Imported as a part of flytelite (its tests), this one is flytelite's own.
    messages = sys.modules.get("_flytelite_warm_messages")
    if messages is None:
        from flytelite.plugins.local.workers import messages

INSTALLATION = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
_PATH_FINDER = importlib.machinery.PathFinder
# A LiteralMap proto this big is worth remembering (map items each read the whole list of inputs): parsing
# it into flytekit's models costs far more than comparing its bytes with the last one's.
MEMO_MIN_BYTES = 512
# Source of the task's modules up to this size is kept compiled for the worker's next imports.
MAX_COMPILED_SOURCE_BYTES = 32 << 20
# A code tarball up to this size is kept in memory for the worker's next attempt.
MAX_KEPT_DISTRIBUTION_BYTES = 16 << 20


def _base_sys_path() -> list[str]:
    """sys.path without the entries PYTHONPATH put there (each attempt puts its own)."""
    from_env = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = list(sys.path)
    for entry in from_env:
        if entry in path:
            path.remove(entry)
    return path


BASE_SYS_PATH = _base_sys_path()


# -- one attempt --------------------------------------------------------------------------------
def run_attempt(request: messages.Run, session_fd: int) -> int:
    """Become the attempt's process (as the cold path starts it) and run the pyflyte command; the exit code."""
    _become_attempt_process(request, session_fd)
    return _finish(run_command(request))


def _become_attempt_process(request: messages.Run, session_fd: int) -> None:
    os.setsid()  # a kill of the group reaches the task's own subprocesses; the server finds it as a leader
    os.close(session_fd)
    # Also recorded here, in case the zygote is killed before it records it.
    record_pid(request, os.getpid(), start_time(os.getpid()))


def run_command(request: messages.Run) -> int:
    """Set up what a fresh process for this attempt would have, run its pyflyte command; the exit code."""
    _redirect_output(request.log)
    _set_environment(request.env)
    restore_blas_threads()
    os.chdir(request.cwd)
    os.makedirs(request.tmp, exist_ok=True)
    tempfile.tempdir = request.tmp
    _reseed()
    _reset_loggers()
    argv = list(request.argv)
    first_path = request.cwd
    # As the cold process sees it: `python -m flytekit.bin.entrypoint pyflyte-execute …`.
    sys.argv = [entrypoint.__file__, *argv]
    try:
        _push_file_access()
        if argv[0] == "pyflyte-fast-execute":
            argv = _fast_execute(argv[1:])
            # The inner pyflyte-execute is a console script in the interpreter's bin folder.
            first_path = request.bin_dir
            sys.argv = [os.path.join(request.bin_dir, argv[0]), *argv[1:]]
        _set_sys_path(first_path)
        entrypoint._pass_through.main(args=argv, prog_name="pyflyte", standalone_mode=True)
        return 0
    except SystemExit as e:
        return _exit_code(e)
    except BaseException:  # noqa: BLE001 - report it as the interpreter would, then exit 1
        sys.excepthook(*sys.exc_info())
        return 1


# OpenBLAS's thread count setters, in numpy's own build (scipy-openblas) and in a system OpenBLAS.
_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")


def _blas_setters() -> list:
    """The thread count setters of the OpenBLAS libraries loaded now (found once, in the zygote: its workers
    inherit them)."""
    if "numpy" not in sys.modules:
        return []
    try:
        with open("/proc/self/maps") as maps:
            libraries = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return []
    found = []
    for library in sorted(libraries):
        loaded = ctypes.CDLL(library)
        setter = next((getattr(loaded, name) for name in _BLAS_SETTERS if hasattr(loaded, name)), None)
        if setter is not None:
            found.append(setter)
    return found


_BLAS = _blas_setters()
# The thread count last given to them in this process (the zygote's: one).
_blas_threads = [1]


def restore_blas_threads() -> None:
    """Give OpenBLAS, which the zygote loaded with one thread (zygote.py), the threads it would take in a fresh
    process of this environment: OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else one per processor."""
    if not _BLAS:
        return
    wanted = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or ""
    threads = int(wanted) if wanted.isdigit() and int(wanted) > 0 else os.cpu_count() or 1
    if threads != _blas_threads[0]:
        for setter in _BLAS:
            setter(threads)
        _blas_threads[0] = threads


def _set_environment(env: dict[str, str]) -> None:
    """Make os.environ exactly `env`, changing only what differs: a worker's items differ in a few of their
    many variables, and clearing and setting them all costs each item far more."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


# -- a worker: attempts of a group one after another ----------------------------------------------------------------
def serve_items(request: messages.Run, session_fd: int, sock: socket.socket) -> int:
    """Run `request`, then each item of its group the zygote sends, while items end cleanly; the exit code."""
    _become_attempt_process(request, session_fd)
    _remember_large_input_maps()
    _remember_compiled_code()
    # Started once, before the baseline, so that an item that starts nothing of its own leaves the process as
    # it found it: flytekit's sync-over-async runner (a daemon thread, an atexit hook) and weakref.finalize's
    # atexit hook (registered with the first finalizer, e.g. of a TemporaryDirectory). flytekit before 1.14
    # has no such runner.
    try:
        from flytekit.utils.asyn import loop_manager
    except ImportError:
        loop_manager = None
    if loop_manager is not None:
        loop_manager.run_sync(_nothing)
    weakref.finalize(_nothing, _nothing)
    baseline = _Baseline()
    reader = sock.makefile("rb")
    while True:
        code = run_command(request)
        _flush()
        if code != 0 or not baseline.unchanged():
            return _finish(code)  # ends as the attempt's process would: the zygote reports its exit
        # The attempt is over (its files written, its log flushed): reported before the clean-up, which then
        # overlaps with the server's round that starts the next attempt.
        try:
            sock.sendall(messages.encode(messages.Done(id=request.id)))
        except OSError:
            return _finish(0)  # the zygote is gone
        baseline.restore()
        try:
            line = reader.readline()
        except OSError:
            line = b""
        if not line:
            return _finish(0)  # retired by the zygote, or the zygote is gone
        message = messages.decode(line)
        if not isinstance(message, messages.Run):
            return _finish(0)  # the zygote sends a worker nothing else
        request = message


async def _nothing() -> None:
    return None


class _Baseline:
    """What a worker looks like between items; an item that leaves it otherwise ends the worker."""

    def __init__(self) -> None:
        self.threads = threading.active_count()
        self.atexit_hooks = atexit._ncallbacks()
        from flytekit.core.context_manager import FlyteContextManager

        self.contexts = FlyteContextManager.size()
        self.modules = set(sys.modules)
        # Process-wide settings a task's module commonly makes at import (logging.basicConfig, warnings filters).
        self.root_logging = logging.root.level, list(logging.root.handlers)
        self.warning_filters = list(warnings.filters)
        restored, watched = _registries()
        self.restored = {(owner, name): _copy_structure(getattr(owner, name)) for owner, name in restored}
        self.watched = {(owner, name): _copy_structure(getattr(owner, name)) for owner, name in watched}

    def unchanged(self) -> bool:
        return (threading.active_count() == self.threads and atexit._ncallbacks() == self.atexit_hooks
                and all(getattr(owner, name) == saved for (owner, name), saved in self.watched.items()))

    def own_code(self, name: str) -> bool:
        """Whether a module imported by the item is the task's code, imported afresh by the next item. Installed
        packages and new submodules of packages the zygote imported stay imported, as in the zygote itself."""
        if name.partition(".")[0] in self.modules:
            return False
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        places = [file] if file else list(getattr(module, "__path__", None) or [])
        return any(not os.path.realpath(p).startswith(INSTALLATION) for p in places)

    def restore(self) -> None:
        """Undo what the item set up: flytekit contexts, its own modules, process-wide settings and registries
        (see __init__), its folder and its log."""
        from flytekit.core.context_manager import FlyteContextManager

        while FlyteContextManager.size() > self.contexts:
            FlyteContextManager.pop_context()
        # Other threads may import meanwhile (flytekit's event loop thread lives on between attempts): iterate
        # over snapshots, and drop entries that may already be gone without failing.
        for name in set(sys.modules) - self.modules:
            if self.own_code(name):
                sys.modules.pop(name, None)
        _forget_finders()
        logging.root.setLevel(self.root_logging[0])
        logging.root.handlers[:] = self.root_logging[1]
        warnings.filters[:] = self.warning_filters  # type: ignore[index]  # a list at run time
        warnings._filters_mutated()  # type: ignore[attr-defined]
        for (owner, name), saved in self.restored.items():
            setattr(owner, name, _copy_structure(saved))
        os.chdir("/")
        _redirect_output(os.devnull)


def _registries() -> tuple[list[tuple[type, str]], list[tuple[type, str]]]:
    """flytekit's process-wide registries, (restored, watched). Importing a task's module fills them; in a
    fresh process they start as the worker's baseline has them. Restored after each item: the registries
    of the module's own entities (launch plans by name, tracked entities), which the next item's import
    of the same module fills again. Watched: type transformers, dataframe encoders and task plugins, also
    filled by flytekit itself on first use and not filled again by a later import; an item that changed
    them ends its worker (the next item gets a fresh process)."""
    from flytekit.core.context_manager import FlyteEntities
    from flytekit.core.launch_plan import LaunchPlan
    from flytekit.core.task import TaskPlugins
    from flytekit.core.type_engine import TypeEngine

    restored = [(LaunchPlan, "CACHE"), (FlyteEntities, "entities")]
    watched = [(TypeEngine, "_REGISTRY"), (TypeEngine, "_RESTRICTED_TYPES"),
               (TaskPlugins, "_PYTHONFUNCTION_TASK_PLUGINS")]
    try:
        from flytekit.types.structured.structured_dataset import StructuredDatasetTransformerEngine as Engine

        watched += [(Engine, n) for n in ("ENCODERS", "DECODERS", "DEFAULT_PROTOCOLS", "DEFAULT_FORMATS", "Renderers")]
    except ImportError:
        pass

    def present(pairs):
        return [(owner, name) for owner, name in pairs if isinstance(getattr(owner, name, None), (dict, list))]

    return present(restored), present(watched)


def _copy_structure(value):
    """Dicts and lists copied all the way down (the registries nest them), everything else shared."""
    if isinstance(value, dict):
        return {k: _copy_structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_structure(v) for v in value]
    return value


def _remember_large_input_maps() -> None:
    """Each map item reads the whole input list from its inputs file, parses it into a proto and that into
    flytekit's models, then takes its own item: the same file for every sibling. The last large inputs file
    read is kept with its proto and models, given again when a later item's file holds the same bytes.
    The file's bytes are compared, not its parsed proto: a memcmp, where parsing the file to compare protos
    would cost each item of a long list much of what the memo saves."""
    from flyteidl.core import literals_pb2
    from flytekit.core import utils
    from flytekit.models import literals

    load = getattr(utils, "load_proto_from_file", None)
    if load is None:
        return  # a flytekit that reads its inputs otherwise: each item parses them
    parse = literals.LiteralMap.from_flyte_idl.__func__
    last: dict = {}  # data: the file's bytes, proto: parsed from them, model: flytekit's, once asked for

    def load_proto_from_file(pb2_type, path):
        if pb2_type is not literals_pb2.LiteralMap:
            return load(pb2_type, path)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) >= MEMO_MIN_BYTES and last.get("data") == data:
            return last["proto"]
        proto = pb2_type()
        proto.ParseFromString(data)
        if len(data) >= MEMO_MIN_BYTES:
            last.clear()
            last.update(data=data, proto=proto)
        return proto

    def from_flyte_idl(cls, pb2_object):
        if cls is not literals.LiteralMap or pb2_object is not last.get("proto"):
            return parse(cls, pb2_object)
        if "model" not in last:
            last["model"] = parse(cls, pb2_object)
        return last["model"]

    utils.load_proto_from_file = load_proto_from_file
    literals.LiteralMap.from_flyte_idl = classmethod(from_flyte_idl)


def _remember_compiled_code() -> None:
    """Each item imports the task's code afresh from its own folder, where no bytecode is cached yet: Python
    compiled each module and (unless told not to) wrote its bytecode there, a folder and a file deleted with
    the attempt's folder. So a module outside the interpreter's installation is compiled once per worker for
    the same source, and its code objects are given to each later import under that import's file name; only
    the worker's first import of a source reads or writes bytecode as usual."""
    loader = importlib.machinery.SourceFileLoader
    get_code = loader.get_code
    compiled: dict[bytes, types.CodeType] = {}
    kept_bytes = 0

    def remembering_get_code(self, fullname):
        nonlocal kept_bytes
        path = self.get_filename(fullname)
        if path.startswith(INSTALLATION) or _installed(os.path.dirname(path)):
            return get_code(self, fullname)
        source = self.get_data(path)
        code = compiled.get(source)
        if code is not None:
            return _with_filename(code, path)
        code = get_code(self, fullname)
        if kept_bytes + len(source) > MAX_COMPILED_SOURCE_BYTES:
            compiled.clear()
            kept_bytes = 0
        compiled[source] = code
        kept_bytes += len(source)
        return code

    loader.get_code = remembering_get_code  # type: ignore[method-assign]  # the worker's own import system


def _with_filename(code: types.CodeType, path: str) -> types.CodeType:
    """`code` and the code objects in it (functions, classes, comprehensions) as compiled from `path`."""
    consts = tuple(_with_filename(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


# -- helpers --------------------------------------------------------------------------------------
def start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot (with the pid, what identifies a process across pid reuse)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def record_pid(request: messages.Run, pid: int, started: int | None) -> None:
    """Record the attempt's process where a server restarted after a crash looks for it (pool.py's
    find_by_recorded_pid): as its working folder's attribute messages.PID_ATTRIBUTE, set in one call and creating
    nothing (the zygote records it between two items, and creating a file is slow on some disks), else (a file
    system without user attributes) in its pid file."""
    try:
        os.setxattr(request.cwd, messages.PID_ATTRIBUTE, f"{pid} {started}\n".encode())
    except OSError:
        write_pid_file(request.pid_file, pid, started)


def write_pid_file(path: str, pid: int, started: int | None) -> None:
    """The line `<pid> <start time>`, in one write and in place: no temporary file renamed over it, one entry
    fewer to make on a disk where that is slow. A reader that finds the line without its end reads it again
    (pool.py's find_by_recorded_pid); the zygote and a child it forked may both write it, and write the same."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:  # the run's folder: the engine makes it with the working folder, should it be gone
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, f"{pid} {started}\n".encode())
    finally:
        os.close(fd)


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


# What flytekit's logger set-up reads: its variables, and whether the process runs a Flyte execution. It also
# asks IPython whether it runs in an IPython shell, which a fresh task process never does, wherever an IPython
# may be imported from: PYTHONPATH, which names each attempt's own code folder, is left out.
_LOGGING_ENV = ("FLYTE_SDK_LOGGING_LEVEL", "FLYTE_SDK_DEV_LOGGING_LEVEL", "FLYTE_SDK_LOGGING_FORMAT",
                "FLYTE_SDK_RICH_TRACEBACKS")
_FLYTEKIT_LOGGERS = ("flytekit", "user_space", "developer")
# (what the set-up read, the loggers as it left them) after the last set-up.
_loggers_configured: list[tuple] = []


def _reset_loggers() -> None:
    """flytekit configures its loggers from the environment at import: configure them from the attempt's,
    unless the last attempt's set-up read the same and its loggers are still as it left them."""
    read = (tuple(os.environ.get(k) for k in _LOGGING_ENV), "FLYTE_INTERNAL_EXECUTION_ID" in os.environ)
    if _loggers_configured and _loggers_configured[0] == (read, _logger_state()):
        return
    for name in ("user_space", "developer"):
        logging.getLogger(name).handlers.clear()
    flytekit.loggers.initialize_global_loggers()
    _loggers_configured[:] = [(read, _logger_state())]


def _logger_state() -> tuple:
    state = []
    for name in _FLYTEKIT_LOGGERS:
        logger = logging.getLogger(name)
        state.append((logger.level, logger.propagate, logger.disabled, tuple(logger.handlers), tuple(logger.filters),
                      tuple((h.level, h.formatter, tuple(h.filters)) for h in logger.handlers)))
    return tuple(state)


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
    return inner  # the server put the code's folder on PYTHONPATH (plugins/local/folders.py's importable)


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
    if _last_distribution[:1] == [distribution]:
        members = _last_distribution[2]
        if members is None:  # unpacked by tarfile, from the file
            with open(local, "wb") as f:
                f.write(_last_distribution[1])
    else:
        FlyteContextManager.current_context().file_access.get_data(distribution, os.path.join(dest_dir, ""))
        members = None
        if os.path.getsize(local) <= MAX_KEPT_DISTRIBUTION_BYTES:
            with open(local, "rb") as f:
                data = f.read()
            members = plain_members(data, dest_dir)
            _last_distribution[:] = [distribution, data, members]
    if members is None:
        with tarfile.open(local, "r:gz") as archive:
            archive.extractall(dest_dir, filter="data")
    else:
        unpack(members, dest_dir)


# The last code tarball downloaded, [uri, bytes, its plain_members]: a worker's attempts share their command,
# so their code tarball. Its content never changes under one name (flytekit names it by its digest, and an
# upload location refuses different content at a name it gave out), so a later attempt gets it without
# downloading it again, and unpacks it without reading the archive again or writing it into its folder (nothing
# reads it there once it is unpacked).
_last_distribution: list = []


def plain_members(data: bytes, dest_dir: str) -> list[tuple[tarfile.TarInfo, bytes | None]] | None:
    """A gzipped tarball's folders and files as tarfile's "data" filter lets them into `dest_dir`, each file
    with its content; None when it holds anything else (links), the filter refuses a member, or its files
    add up to more than MAX_KEPT_DISTRIBUTION_BYTES: tarfile then unpacks it (and says what is wrong)."""
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    size = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive:
                kept = tarfile.data_filter(member, dest_dir)
                if kept is None:
                    continue
                if kept.isdir():
                    members.append((kept, None))
                    continue
                size += kept.size
                content = archive.extractfile(member) if kept.isreg() else None
                if content is None or size > MAX_KEPT_DISTRIBUTION_BYTES:
                    return None
                members.append((kept, content.read()))
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return None
    return members


def unpack(members: list[tuple[tarfile.TarInfo, bytes | None]], dest_dir: str) -> None:
    """What tarfile's extractall(dest_dir, filter="data") does with plain_members' members, at a seventh of
    its cost for a tarball of a few modules: folders made (private if they have a mode; the filter leaves
    them none), files written with their modes and times, then the folders' times (and modes), deepest first."""
    folders = []
    for member, content in members:
        path = os.path.join(dest_dir, member.name)
        if content is None:
            os.makedirs(path, 0o777 if member.mode is None else 0o700, exist_ok=True)
            folders.append((member, path))
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Through the open file, not its path: on a slow disk each path looked up again costs the attempt.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            _set_attributes(member, fd)
        finally:
            os.close(fd)
    for member, path in sorted(folders, key=lambda folder: folder[0].name, reverse=True):
        _set_attributes(member, path)


def _set_attributes(member: tarfile.TarInfo, file: str | int) -> None:
    """The member's times and mode on the file or folder (a path, or a file's descriptor)."""
    if member.mtime is not None:
        os.utime(file, (member.mtime, member.mtime))
    if member.mode is not None:
        os.chmod(file, member.mode)


def _set_sys_path(first: str) -> None:
    """sys.path as a fresh interpreter for this attempt would have it: first entry, PYTHONPATH, the rest."""
    from_env = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [first, *from_env, *BASE_SYS_PATH]
    _forget_finders()


def _forget_finders() -> None:
    """Drop the import system's cached finders of folders outside the interpreter's installation (the
    task's code, which the attempt may have changed or which may be gone); those of installed packages
    stay, with their cached listings: a package installed or removed retires the whole zygote (pool.py), and
    listing site-packages again made every attempt's failed optional imports (IPython, for one) slow."""
    cache = sys.path_importer_cache
    # A snapshot first: _installed releases the GIL (it stats), and another thread's import may add an entry.
    for path in list(cache):
        if not _installed(path):
            cache.pop(path, None)
    for hook in sys.meta_path:
        if hook is not _PATH_FINDER and hasattr(hook, "invalidate_caches"):
            hook.invalidate_caches()


_INSTALLED_PATHS: set = set()


def _installed(path) -> bool:
    """Whether a folder on sys.path is inside the interpreter's installation (those found are remembered:
    realpath stats every part of the path; the task's own folders are new with each attempt)."""
    if path in _INSTALLED_PATHS:
        return True
    try:
        inside = os.path.realpath(path).startswith(INSTALLATION)
    except (TypeError, ValueError):
        return False
    if inside:
        _INSTALLED_PATHS.add(path)
    return inside


def _push_file_access() -> None:
    """A FileAccessProvider built from the attempt's environment, sandboxed in its temp dir (the attempt's own,
    new and empty: flytekit's folder in it needs no random name of its own)."""
    from flytekit.configuration import DataConfig
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.core.data_persistence import FileAccessProvider

    root = tempfile.gettempdir()
    provider = FileAccessProvider(local_sandbox_dir=root, raw_output_prefix=os.path.join(root, "raw"),
                                  data_config=DataConfig.auto())
    ctx = FlyteContextManager.current_context().new_builder().with_file_access(provider).build()
    FlyteContextManager.push_context(ctx)


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass


def _finish(code: int) -> int:
    """What interpreter shutdown does that matters: wait for threads, run atexit hooks, flush."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    atexit._run_exitfuncs()
    _flush()
    return code
