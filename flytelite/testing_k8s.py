"""A real single-node Kubernetes (v1.20.2) for tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, containerd (runc, a CNI bridge) and a kubelet on this machine, started by
`scripts/k8s/start.sh` with its state in a temporary folder and stopped by `scripts/k8s/stop.sh`,
which also undoes what it changed on the host.

The binaries are built once by `scripts/k8s/build.sh` into `FLYTELITE_K8S_CACHE`
(`~/.cache/flytelite-k8s` by default); `KubernetesCluster.unavailable_reason()` says why a cluster cannot
start here (no binaries, not root), so tests can skip. Only one such cluster runs on a host at a time.
There is no registry: pods use the images `scripts/k8s/images.sh` imports (`TASK_IMAGE`, a skeleton that
runs the host's Python through hostPath mounts of /usr and the environment's folders) with
`imagePullPolicy: Never`.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts" / "k8s"
# The skeleton image of task pods: no files of its own beyond /etc/passwd; mount the host's /usr.
TASK_IMAGE = "localhost/flytelite-task:v1"
# The same skeleton whose entrypoint runs Spark's driver and executors (scripts/k8s/spark-entrypoint.sh).
SPARK_IMAGE = "localhost/flytelite-spark:v1"
COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "pause")


def cache_dir() -> Path:
    """Where build.sh puts the binaries: FLYTELITE_K8S_CACHE, else ~/.cache/flytelite-k8s."""
    return Path(os.environ.get("FLYTELITE_K8S_CACHE") or Path.home() / ".cache" / "flytelite-k8s")


def python_host_paths(project: Path | None = None) -> list[str]:
    """The host folders a pod of `TASK_IMAGE` mounts (read-only, at the same paths) to run this process's
    Python environment: /usr, the base interpreter's prefix when it is elsewhere (pyenv, /opt/...), and the
    folder holding the environment (a venv in a project checkout, say)."""
    paths = ["/usr"]
    base = os.path.realpath(sys.base_prefix)
    if not (base == "/usr" or base.startswith("/usr/")):
        paths.append(base)
    own = os.path.realpath(project or sys.prefix)
    if own not in paths and not any(own.startswith(p + "/") for p in paths):
        paths.append(own)
    return paths


def flytelite_config(kubeconfig: Path, project: Path, *mounts: Path, engine: dict | None = None,
                     **kubernetes) -> str:
    """YAML for a flytelite server whose python tasks and raw containers run as pods of TASK_IMAGE on this
    cluster: the pods run this process's Python environment (`project` holds it) through hostPath mounts,
    plus `mounts` (a raw container's helpers too, as `python3` on the PATH); `engine` and `kubernetes` add to
    those config sections."""
    return yaml.safe_dump({
        "engine": engine or {},
        "plugins": {"python-task": "kubernetes", "raw-container": "kubernetes"},
        "kubernetes": {
            "kubeconfig": str(kubeconfig), "images": {"default": TASK_IMAGE}, "image_pull_policy": "Never",
            "host_mounts": python_host_paths(project) + [str(m) for m in mounts],
            "env": {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}, **kubernetes,
        },
    })


class KubernetesCluster:
    """The test cluster with its state in a folder of its own (a temporary one unless given)."""

    def __init__(self, state_dir: Path | None = None, cache: Path | None = None):
        self.cache = cache or cache_dir()
        self._own_folder = state_dir is None
        self.state_dir = state_dir or Path(tempfile.mkdtemp(prefix="flytelite-k8s-"))
        self.started = False
        self.start_output = ""

    @staticmethod
    def unavailable_reason(cache: Path | None = None) -> str | None:
        """Why no cluster can start here (None when it can)."""
        cache = cache or cache_dir()
        missing = [c for c in COMMANDS if not os.access(cache / "bin" / c, os.X_OK)]
        if missing:
            return (f"the Kubernetes test binaries are not built ({', '.join(missing)} missing in {cache}/bin): "
                    "run scripts/k8s/build.sh (once, ~6 minutes) or `make k8s-build`")
        if os.geteuid() != 0:
            return "the Kubernetes test cluster needs root (containerd, the kubelet and the pod network)"
        return None

    @classmethod
    def available(cls, cache: Path | None = None) -> bool:
        """Are the binaries built (and are we root)?"""
        return cls.unavailable_reason(cache) is None

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (token auth, the apiserver's self-signed certificate as CA)."""
        return self.state_dir / "admin.kubeconfig"

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["FLYTELITE_K8S_STATE"] = str(self.state_dir)
        env["FLYTELITE_K8S_CACHE"] = str(self.cache)
        return env

    def start(self, timeout: float = 300) -> None:
        """Start everything and import the images; returns once the node is Ready."""
        out = subprocess.run(["bash", str(SCRIPTS / "start.sh")], env=self._env(), capture_output=True,
                             text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.start_output = out.stdout + out.stderr
        if out.returncode != 0:
            raise RuntimeError(f"scripts/k8s/start.sh failed ({out.returncode}):\n{self.start_output}")
        self.started = True

    def stop(self) -> None:
        """Stop everything, undo the host changes and remove the state folder (if it was a temporary one)."""
        out = subprocess.run(["bash", str(SCRIPTS / "stop.sh")], env=self._env(), capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.started = False
        if out.returncode != 0:
            raise RuntimeError(f"scripts/k8s/stop.sh failed ({out.returncode}):\n{out.stdout}{out.stderr}")
        if self._own_folder:
            # Never remove a folder something is still mounted under (a pod's volume could be the host's /usr).
            prefix = str(self.state_dir) + "/"
            with open("/proc/self/mounts") as f:
                left = [line.split()[1] for line in f if line.split()[1].startswith(prefix)]
            if left:
                raise RuntimeError(f"still mounted under {self.state_dir}, kept: {left}")
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def api_client(self):
        """A `kubernetes` ApiClient for the admin kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    @property
    def pod_gateway(self) -> str:
        """The host's address on the pod network (its bridge): how pods reach a service of this machine that
        listens on every address (the bridge exists once a pod has started)."""
        subnet = ipaddress.ip_network(os.environ.get("FLYTELITE_K8S_POD_SUBNET", "10.244.0.0/24"))
        return str(next(subnet.hosts()))

    def import_image(self, archive: Path) -> None:
        """Load an OCI archive (`make image`) into the cluster's containerd, where pods find it by name."""
        out = subprocess.run(["bash", str(SCRIPTS / "import-image.sh"), str(archive)], env=self._env(),
                             capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise RuntimeError(f"scripts/k8s/import-image.sh {archive} failed ({out.returncode}): "
                               f"{out.stderr or out.stdout}")

    def log_text(self, component: str) -> str:
        """The log of one component: containerd, etcd, apiserver, kubelet, controller-manager, scheduler."""
        path = self.logs_dir / f"{component}.log"
        return path.read_text(errors="replace") if path.exists() else ""
