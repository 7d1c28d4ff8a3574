"""One watch on every object of a kind flytelite created (pods, or an operator's custom resources), kept as a
cache, in the way of client-go's informers.

A thread lists the objects labelled `flytelite.io/managed=true` in all namespaces, then watches them from
the list's resourceVersion; every change updates the cache and calls `on_change(obj, key)`, which wakes the
execution that owns the object (FlytePropeller's plugin manager enqueues the owner of a watched object the
same way). A watch that ends is resumed from the last version seen; an expired version (410 Gone) or an
error relists. Rounds read objects from the cache, never by polling the apiserver. Objects are dicts in
the API's JSON shape.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from flytelite.kubeclient import MANAGED_LABEL

log = logging.getLogger(__name__)

SELECTOR = f"{MANAGED_LABEL}=true"
# A watch request ends after this long and is resumed.
WATCH_SECONDS = 20
RETRY_SECONDS = 1.0
PodKey = tuple[str, str]  # (namespace, name)


def pod_key(pod: dict) -> PodKey:
    meta = pod.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class Informer:
    def __init__(self, list_all: Callable[..., Any], on_change: Callable[[dict | None, PodKey], None],
                 what: str = "pods"):
        """`list_all(**query)` lists (and with watch=True watches) the objects in all namespaces;
        `on_change(obj, key)` is called from the informer's thread for each change (obj None: deleted)."""
        self.list_all = list_all
        self.what = what
        self.on_change = on_change
        self._pods: dict[PodKey, dict] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: watch.Watch | None = None

    def start(self) -> None:
        """Start watching (again: nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=f"k8s-informer-{self.what}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching. The thread ends at the next event or when its watch request ends (it is a daemon:
        a stopping server does not wait for it)."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def get(self, key: PodKey) -> dict | None:
        with self._lock:
            return self._pods.get(key)

    def pods(self) -> list[dict]:
        with self._lock:
            return list(self._pods.values())

    def _run(self) -> None:
        version = None
        while not self._stopping.is_set():
            try:
                if version is None:
                    version = self._list()
                version = self._watch_from(version)
            except ApiException as e:
                if e.status == 410:  # the version expired: list again
                    version = None
                    continue
                log.warning("watching flytelite's %s failed (%s %s); listing again", self.what, e.status, e.reason)
                version = None
                self._stopping.wait(RETRY_SECONDS)
            except Exception as e:  # noqa: BLE001 - a broken connection must not end the informer
                if self._stopping.is_set():
                    return
                log.warning("watching flytelite's %s failed (%s); listing again", self.what, e)
                version = None
                self._stopping.wait(RETRY_SECONDS)

    def _list(self) -> str:
        response = self.list_all(label_selector=SELECTOR, _preload_content=False)
        listed = json.loads(response.data)
        pods = {pod_key(p): p for p in listed.get("items", [])}
        with self._lock:
            gone = [k for k in self._pods if k not in pods]
            self._pods = pods
        self._synced.set()
        for key in gone:
            self.on_change(None, key)
        for key, pod in pods.items():
            self.on_change(pod, key)
        return listed.get("metadata", {}).get("resourceVersion", "")

    def _watch_from(self, version: str) -> str:
        self._watch = w = watch.Watch()
        started = time.monotonic()
        for event in w.stream(self.list_all, label_selector=SELECTOR,
                              resource_version=version, timeout_seconds=WATCH_SECONDS, deserialize=False,
                              allow_watch_bookmarks=True):
            if self._stopping.is_set():
                w.stop()
                break
            kind, pod = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = pod.get("code")
                raise ApiException(status=code, reason=pod.get("message", "watch error"))
            version = (pod.get("metadata") or {}).get("resourceVersion") or version
            if kind == "BOOKMARK":
                continue
            key = pod_key(pod)
            with self._lock:
                if kind == "DELETED":
                    self._pods.pop(key, None)
                else:
                    self._pods[key] = pod
            self.on_change(None if kind == "DELETED" else pod, key)
        log.debug("%s watch ended after %.1f s; resuming from version %s", self.what, time.monotonic() - started,
                  version)
        return version


def pod_informer(api: client.CoreV1Api, on_change: Callable[[dict | None, PodKey], None]) -> Informer:
    return Informer(api.list_pod_for_all_namespaces, on_change, "pods")


def custom_informer(api: client.CustomObjectsApi, group: str, version: str, plural: str,
                    on_change: Callable[[dict | None, PodKey], None]) -> Informer:
    return Informer(partial(api.list_cluster_custom_object, group, version, plural), on_change, plural)
