"""A Kubernetes API client from flytelite's `kubernetes` config (the task plugin and the console's pod logs)."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from flytelite.config import KubernetesConfig

# Every pod flytelite creates carries this label: the plugin's informer watches pods by it, and the console
# serves the logs of such pods only.
MANAGED_LABEL = "flytelite.io/managed"


def core_api(cfg: KubernetesConfig) -> client.CoreV1Api:
    """CoreV1Api from the kubeconfig file, or from the pod's service account when none is configured."""
    if cfg.kubeconfig:
        return client.CoreV1Api(kube_config.new_client_from_config(config_file=cfg.kubeconfig,
                                                                   context=cfg.context or None))
    kube_config.load_incluster_config()
    return client.CoreV1Api(client.ApiClient())


class Namespaces:
    """Creates a namespace the first time it is needed (once per process; one that exists is fine)."""

    def __init__(self, api: client.CoreV1Api, create: bool = True):
        self.api, self.create = api, create
        self._known: set[str] = set()

    def ensure(self, name: str) -> None:
        if name in self._known or not self.create:
            return
        try:
            self.api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except ApiException as e:
            if e.status != 409:
                raise
        self._known.add(name)


class NamespacedSecret:
    """One Secret flytelite writes into each namespace that needs it, once per process: created, or replaced
    when one of its name exists (its value may have changed since). Never read back."""

    def __init__(self, api: client.CoreV1Api, name: str, data: Callable[[str], dict[str, str]]):
        self.api, self.name, self.data = api, name, data
        self._written: set[str] = set()

    def ensure(self, namespace: str) -> None:
        """Written with `data(namespace)`."""
        if namespace in self._written:
            return
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "stringData": self.data(namespace),
                "metadata": {"name": self.name, "labels": {MANAGED_LABEL: "true"}}}
        try:
            self.api.create_namespaced_secret(namespace, body)
        except ApiException as e:
            if e.status != 409:
                raise
            self.api.replace_namespaced_secret(self.name, namespace, body)
        self._written.add(namespace)
