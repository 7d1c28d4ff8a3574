"""A module whose server has a configuration of its own (here: a parallelism limit and cold task processes)."""

import pytest

from hello_flytelite.workflows import hello

pytestmark = pytest.mark.flytelite(config={"engine": {"default_max_parallelism": 3, "warm_workers": False}})


def test_runs_with_the_module_configuration(flytelite_run, flytelite_server):
    assert flytelite_run(hello, name="cold") == "Hello, cold!"
    assert flytelite_run.last_execution.spec.max_parallelism == 3
    assert "warm_workers: false" in (flytelite_server.log_path.parent / "flytelite.yaml").read_text()
