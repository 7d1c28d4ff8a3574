"""Engines on a server whose blob store is S3 (a real moto server): the engines' processes get the bucket's
settings, the job runner's environment for Dask, the Ray job's runtime environment for Ray."""

from __future__ import annotations

import pytest

from flytelite.testing import make_server
from tests.compute.conftest import NO_ENGINES, compute_config, finished, run, succeeded

pytestmark = [pytest.mark.e2e, NO_ENGINES]


@pytest.fixture(scope="module")
def s3_compute_server(tmp_path_factory, s3):
    server = make_server(tmp_path_factory.mktemp("s3-compute"), s3.server_config("flytelite") + compute_config())
    with open(server.config_path, "a") as f:
        f.write(s3.client_config())
    server.start()
    yield server
    server.stop()


def test_dask_and_ray_tasks_read_and_write_the_bucket(s3_compute_server, s3, tmp_path):
    dask = finished(s3_compute_server, run(s3_compute_server, tmp_path / "dask", "dask_wf.py", "dask_wf"))
    ray = finished(s3_compute_server, run(s3_compute_server, tmp_path / "ray", "ray_wf.py", "nodes_wf"))
    for execution in (dask, ray):
        succeeded(execution)
    assert dask.outputs["o1"] == 1 and ray.outputs["o0"] == "3 seen"
    for execution in (dask, ray):
        assert execution.closure.outputs.uri.startswith("s3://"), execution.closure.outputs.uri
