"""Loaded at start-up by every Python process of a task flytelite runs locally (this folder is put first
on the task's PYTHONPATH); standard library only. It imports neither flytekit nor fsspec itself: it
adjusts them right after the process first imports them, so a process that never uses them pays nothing.

- `ImageSpec.is_container()`. An image built from a flytekit ImageSpec carries `_F_IMG_ID=<spec id>`,
  which `is_container()` compares against, so module code guarded by it (imports of packages only the
  image has) runs only inside that image. flytelite runs a task in the environment its image is mapped
  to, which has no such variable: here `is_container()` is also true for the spec whose image name is
  the task's image (FLYTELITE_TASK_IMAGE). flytekit's own answer is kept when it is already true.
- `local://` URIs (a local blob store's blobs, which flytekit treats as remote). Writers to remote
  storage expect no folders, as in an object store; fsspec's local files need them. Here `local://` is
  served by a LocalFileSystem that creates parent folders when it writes, under a name pyarrow does not
  replace by its own local filesystem (which never creates them). A directory's URI may name a single file
  (flytekit's upload of a folder holding one file names that file): getting it recursively into a folder
  puts the file in the folder, as an object store's listing of that key does.
- The `flyte` SDK's asynchronous opening of a file (`File.open()`): it opens object stores and asynchronous
  filesystems only, and `local://` is neither. Here a `local://` file opens as a local file does (through
  aiofiles, which the SDK requires), its folders created for writing.
- torch's elastic agent, in an attempt whose engine flytelite keeps on loopback (FLYTELITE_LOOPBACK names the
  address: the compute launcher sets it for an elastic PyTorch job's nodes, all on this machine). The agent
  opens the store its workers share on every interface (torch has no setting for that address) and tells them
  its host's name: here the store listens on, and is named by, that loopback address.

Another sitecustomize further along sys.path (a distribution's own) still runs after this one.
"""

import importlib.util
import os
import sys

IMAGE_ENV = "FLYTELITE_TASK_IMAGE"
LOOPBACK_ENV = "FLYTELITE_LOOPBACK"
_HERE = os.path.dirname(os.path.abspath(__file__))


def patch_image_spec(module) -> None:
    spec_class = module.ImageSpec
    original = spec_class.is_container
    if getattr(original, "_flytelite", False):
        return

    def is_container(self) -> bool:
        if original(self):
            return True
        image = os.environ.get(IMAGE_ENV)
        if not image:
            return False
        try:
            return self.image_name() == image
        except Exception:  # noqa: BLE001 - a spec whose name cannot be computed here is not this image
            return False

    is_container._flytelite = True  # type: ignore[attr-defined]  # a marker on the function object
    spec_class.is_container = is_container


def register_local_fs(module) -> None:
    from fsspec.implementations.local import LocalFileSystem

    class TaskLocalFileSystem(LocalFileSystem):
        protocol = ("local",)

        def __init__(self, auto_mkdir=True, **kwargs):
            super().__init__(auto_mkdir=auto_mkdir, **kwargs)

        def get(self, rpath, lpath, recursive=False, **kwargs):
            if recursive and isinstance(rpath, str) and isinstance(lpath, str):
                source = self._strip_protocol(rpath).rstrip("/")
                if self.isfile(source) and (lpath.endswith("/") or os.path.isdir(lpath)):
                    lpath = os.path.join(lpath, os.path.basename(source))
                    rpath = source
            return super().get(rpath, lpath, recursive=recursive, **kwargs)

    TaskLocalFileSystem.__module__, TaskLocalFileSystem.__qualname__ = __name__, "TaskLocalFileSystem"
    globals()["TaskLocalFileSystem"] = TaskLocalFileSystem  # so that pickled instances find their class
    module.register_implementation("local", TaskLocalFileSystem, clobber=True)


def open_local_files(module) -> None:
    original = module.open
    if getattr(original, "_flytelite", False):
        return

    async def open(path, mode="rb", **kwargs):  # noqa: A001 - the SDK's name
        if not (isinstance(path, str) and path.startswith("local://")):
            return await original(path, mode, **kwargs)
        import aiofiles

        local = path[len("local://"):]
        if any(m in mode for m in "wax"):
            os.makedirs(os.path.dirname(local), exist_ok=True)
        return await aiofiles.open(local, mode)

    open._flytelite = True  # type: ignore[attr-defined]  # a marker on the function object
    module.open = open


def keep_elastic_store_on_loopback(module) -> None:
    loopback = os.environ.get(LOOPBACK_ENV)
    handler, nodes = module.DynamicRendezvousHandler, module._NodeDescGenerator
    if not loopback or getattr(handler._create_tcp_store_server, "_flytelite", False):
        return
    generate = nodes.generate

    def create_tcp_store_server(self, master_addr, master_port):
        import socket

        from torch.distributed import TCPStore

        listener = socket.socket()
        listener.bind((loopback, master_port))
        listener.listen(128)
        port = listener.getsockname()[1]
        return TCPStore(host_name=loopback, port=port, is_master=True, multi_tenant=True,
                        master_listen_fd=listener.detach())

    def generate_here(self, local_addr=None):
        return generate(self, local_addr or loopback)

    create_tcp_store_server._flytelite = True  # type: ignore[attr-defined]  # a marker on the function object
    handler._create_tcp_store_server = create_tcp_store_server
    nodes.generate = generate_here


_PATCHES = {"flytekit.image_spec.image_spec": patch_image_spec, "fsspec": register_local_fs,
            "flyte.storage._storage": open_local_files,
            "torch.distributed.elastic.rendezvous.dynamic_rendezvous": keep_elastic_store_on_loopback}


class _PatchOnImport:
    """Applies a module's patch right after the module is first imported."""

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None or name in sys.modules:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


def _install() -> None:
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def _run_next_sitecustomize() -> None:
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _HERE:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_next_sitecustomize", candidate)
            assert spec is not None and spec.loader is not None, "a .py file has a spec with a loader"
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_install()
if __name__ == "sitecustomize":
    _run_next_sitecustomize()
