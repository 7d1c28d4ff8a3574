"""GET /k8s/logs/<namespace>/<pod>: the log of a task attempt's pod, read through the apiserver.

The kubernetes task plugin links each attempt's log here. While the pod runs the answer streams (the
apiserver's follow), so the log is live; once it ended, the whole log. Only pods flytelite created
(labelled flytelite.io/managed=true) are served; nothing else of the cluster is reachable this way.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from flytelite.config import KubernetesConfig
from flytelite.errors import FlyteliteError, client_message
from flytelite.kubeclient import MANAGED_LABEL, core_api

CHUNK_BYTES = 64 * 1024


def pod_log_endpoint(cfg: KubernetesConfig, may_view: Callable[[Request, str, str], None]):
    """The endpoint; `may_view(request, project, domain)` raises a flytelite error unless the caller may see the
    pod's project and domain (its labels)."""
    api = None

    def serve(request: Request) -> Response:
        nonlocal api
        api = api or core_api(cfg)
        namespace, name = request.path_params["namespace"], request.path_params["pod"]
        try:
            pod = json.loads(api.read_namespaced_pod(name, namespace, _preload_content=False).data)
        except ApiException as e:
            if e.status == 404:
                return PlainTextResponse(f"no pod {namespace}/{name}: it finished and was cleaned up, or never "
                                         "existed\n", status_code=404)
            return PlainTextResponse(f"the apiserver refused to show pod {namespace}/{name}: {e.status} {e.reason}\n",
                                     status_code=502)
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get(MANAGED_LABEL) != "true":
            return PlainTextResponse(f"pod {namespace}/{name} is not a flytelite task pod\n", status_code=404)
        labels = meta.get("labels") or {}
        try:
            may_view(request, labels.get("project", ""), labels.get("domain", ""))
        except FlyteliteError as exc:
            return PlainTextResponse(client_message(str(exc)) + "\n", status_code=exc.http_status)
        container = (meta.get("annotations") or {}).get("primary_container_name")
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Pending":
            return PlainTextResponse(f"pod {namespace}/{name} has not started yet\n")
        follow = phase == "Running"
        try:
            stream = api.read_namespaced_pod_log(name, namespace, container=container, follow=follow,
                                                 _preload_content=False)
        except ApiException as e:
            return PlainTextResponse(f"the apiserver has no log of pod {namespace}/{name}: {e.status} {e.reason}\n",
                                     status_code=502)
        return StreamingResponse(stream.stream(CHUNK_BYTES), media_type="text/plain; charset=utf-8",
                                 headers={"Cache-Control": "no-store"})

    return serve
