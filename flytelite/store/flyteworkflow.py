"""The execution-level settings admin hands to propeller with a FlyteWorkflow row (JSON-persisted)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field


@dataclass
class ExecutionSpec:
    project: str
    domain: str
    name: str
    # LiteralMap of the workflow's inputs (start-node outputs), in the blob store.
    inputs_uri: str
    raw_output_prefix: str
    # Identifiers as "project/domain/name/version" strings ("" when not applicable).
    launch_plan: str = ""
    workflow: str = ""
    max_parallelism: int = 25
    envs: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    interruptible: bool | None = None
    overwrite_cache: bool = False
    principal: str = ""
    # The Kubernetes service account the execution's pods run as (its security context's; "" for the default).
    service_account: str = ""
    # Child executions (launch-plan nodes): the parent's execution name and node execution id.
    parent_execution: str = ""
    parent_node_id: str = ""
    # A recovery (RecoverExecution): the execution whose succeeded nodes are copied, not rerun.
    recover_from: str = ""
    # Plugin overrides (PLUGIN_OVERRIDE attributes): task type -> [plugin ids, missing-plugin behavior
    # (flyteidl.admin.PluginOverride: 0 FAIL, 1 USE_DEFAULT)].
    task_plugins: dict[str, list] = field(default_factory=dict)
    # The W3C trace context of the request that created the execution ("" without tracing): its rounds and
    # task launches are spans of that trace (flytelite/tracing.py).
    traceparent: str = ""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ExecutionSpec:
        data = json.loads(text)
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
