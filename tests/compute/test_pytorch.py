"""PyTorch tasks as the training operator runs a PyTorchJob: a master and workers, or elastic nodes meeting at a
rendezvous, as processes of this machine; all reduce across them."""

from __future__ import annotations

import pytest

from tests.compute.conftest import NO_ENGINES, attempts_processes, finished, run, succeeded
from tests.e2e.flyte_cli import wait_for

pytestmark = [pytest.mark.e2e, NO_ENGINES]


def test_pytorch_replicas_and_elastic_nodes_reduce_across_each_other(server, tmp_path):
    name = run(server, tmp_path, "pytorch_wf.py", "pytorch_wf")
    execution = finished(server, name)
    succeeded(execution)
    assert execution.outputs["o0"] == "world=3 sum=6 ranks=3"
    assert execution.outputs["o1"] == "world=2 sum=3"
    assert execution.outputs["o2"] == "world=2 sum=3"
    logs = {log.name for n in execution.node_executions.values() for t in n.task_executions
            for log in t.closure.logs}
    assert {"Master log (pytorch)", "worker-0 log (pytorch)", "worker-1 log (pytorch)", "node-1 log (pytorch)"} <= logs
    wait_for(lambda: not attempts_processes(name), "the replicas to exit", timeout=60)
