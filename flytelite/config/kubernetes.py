"""The `kubernetes:` block of flytelite's configuration: the cluster the kubernetes task plugin sends attempts
to, and how it shapes their pods (FlytePropeller's k8s plugin config)."""

from __future__ import annotations

from dataclasses import dataclass, field

# The program of a raw-container pod's downloader and uploader (plugins/kubernetes/copilot_main.py).
COPILOT_MODULE = "flytelite.plugins.kubernetes.copilot_main"


@dataclass
class KubernetesConfig:
    """How the kubernetes task plugin reaches a cluster and shapes the pods of task attempts
    (plugins/kubernetes); used for the task types `plugins` sends there."""

    # A kubeconfig file; empty: the pod's own service account when flytelite runs in the cluster.
    kubeconfig: str = ""
    # The kubeconfig's context to use; empty: its current context.
    context: str = ""
    # Namespace of a project and domain's pods (FlyteAdmin's namespace_mapping.template default).
    namespace_template: str = "{{ project }}-{{ domain }}"
    # Create a missing namespace the first time an attempt needs it.
    create_namespaces: bool = True
    # Task image -> the name the cluster knows it by (for clusters whose images are named differently);
    # "default" for every image not listed.
    images: dict[str, str] = field(default_factory=dict)
    # The imagePullPolicy of task containers: Always, IfNotPresent or Never.
    image_pull_policy: str = "IfNotPresent"
    # CPU request of a task that names none (its limit, when it names one, otherwise). FlytePropeller's
    # default-cpus is 1000m; small requests fit more pods on a laptop's cluster.
    default_cpu: str = "100m"
    # CPU limit of a task that names no CPU (empty: none, so it may use idle cores; FlytePropeller would cap it
    # at its request). A task's other missing limits are its requests, as FlytePropeller sets them.
    default_cpu_limit: str = ""
    # Memory request of a task that names none (its limit, when it names one, otherwise); FlytePropeller's
    # default-memory is 1024Mi.
    default_memory: str = "1Gi"
    # Service account of pods whose execution names none (empty: the namespace's default).
    service_account: str = ""
    # Tolerations of interruptible attempts' pods (FlytePropeller's interruptible-tolerations).
    interruptible_tolerations: list[dict] = field(default_factory=list)
    # Node selector of interruptible attempts' pods (FlytePropeller's interruptible-node-selector).
    interruptible_node_selector: dict[str, str] = field(default_factory=dict)
    # Extra env vars of every pod (FlytePropeller's default-env-vars).
    env: dict[str, str] = field(default_factory=dict)
    # With authentication on: the Secret flytelite writes into each task namespace with the task client's
    # secret (key client_secret, as Flyte's flyte-secret-auth), which pods mount at /etc/secrets.
    task_client_secret: str = "flyte-secret-auth"
    # Host folders mounted into every pod at the same path (a single-node cluster on the server's machine:
    # the task interpreter's environment; a local blob store is mounted by itself).
    host_mounts: list[str] = field(default_factory=list)
    # Run pods in the node's network (FlytePropeller's enable-host-networking-pod): on a single-node cluster,
    # pods then reach services on the machine's localhost, such as an S3 server.
    host_network: bool = False
    # Delete finished pods (FlytePropeller keeps them until the FlyteWorkflow goes).
    delete_finished_pods: bool = True
    # With delete_finished_pods: keep the failed ones, to read.
    keep_failed_pods: bool = False
    # Most attempt pods not yet finished at once, over all executions (0: no cap): a 10,000-item map task
    # waits in QUEUED instead of flooding the apiserver.
    max_pods_in_flight: int = 500
    # FlytePropeller's image-pull-backoff-grace-period: ImagePullBackOff fails the attempt after this.
    image_pull_grace_seconds: float = 180.0
    # A PyTorchJob or MPIJob the training operator has not started this long after its creation fails
    # (flyteplugins' kf-operator timeout; 0: wait forever).
    kubeflow_timeout_seconds: float = 60.0
    # Raw containers (flytekit ContainerTask) with data config get their inputs laid out and their outputs
    # collected by two containers beside theirs (FlytePropeller's co-pilot): their image, one with flytelite
    # installed (empty: the image "default" in `images` maps to).
    copilot_image: str = ""
    # The co-pilot containers' command, in copilot_image.
    copilot_command: list[str] = field(default_factory=lambda: ["python3", "-m", COPILOT_MODULE])

    def __post_init__(self) -> None:
        if self.max_pods_in_flight < 0:
            raise ValueError(f"kubernetes.max_pods_in_flight must be 0 (no cap) or more, not {self.max_pods_in_flight}")
        if self.image_pull_policy not in ("Always", "IfNotPresent", "Never"):
            raise ValueError(f"kubernetes.image_pull_policy must be Always, IfNotPresent or Never, "
                             f"not {self.image_pull_policy!r}")
