"""The metrics' text format, as Prometheus parses it and as Flyte's Go client writes it."""

from __future__ import annotations

from flytelite.metrics import Metrics, rpc_prefix


def test_rpc_prefixes_are_flyteadmins():
    assert rpc_prefix("/flyteidl.service.AdminService/CreateExecution") == "flyte:admin:admin:create_execution:"
    assert rpc_prefix("/flyteidl.service.DataProxyService/CreateUploadLocation") == \
        "flyte:admin:data_proxy:create_upload_location:"


def test_counters_summaries_and_gauges_in_text_format():
    metrics = Metrics()
    metrics.inc("a:hits", "hits by plan", project="p", name='odd "name"\\')
    metrics.inc("a:hits", "hits by plan", 2, project="p", name="n")
    metrics.observe("a:time_ms", "time", 1.5)
    metrics.observe("a:time_ms", "time", 2.5)
    metrics.gauge("a:depth", "depth", lambda: 7)
    metrics.gauge("a:broken", "a gauge that cannot be read", lambda: 1 / 0)
    metrics.gauge("a:forks", "kept elsewhere", lambda: 3, "counter")
    assert metrics.exposition().decode().splitlines() == [
        "# HELP a:hits hits by plan",
        "# TYPE a:hits counter",
        'a:hits{name="n",project="p"} 2.0',
        'a:hits{name="odd \\"name\\"\\\\",project="p"} 1.0',
        "# HELP a:time_ms time",
        "# TYPE a:time_ms summary",
        "a:time_ms_sum 4.0",
        "a:time_ms_count 2.0",
        "# HELP a:depth depth",
        "# TYPE a:depth gauge",
        "a:depth 7.0",
        "# HELP a:forks kept elsewhere",
        "# TYPE a:forks counter",
        "a:forks 3.0",
    ]
