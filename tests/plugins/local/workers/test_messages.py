"""The warm workers' messages (plugins/local/workers/messages.py): every kind goes over the wire and back unchanged,
and a stream cut anywhere gives the same messages."""

from __future__ import annotations

import json

from flytelite.plugins.local.workers import messages as m

EVERY_KIND = [
    m.Run(id=1, argv=["pyflyte-execute", "--inputs", "s3://b/in.pb"], env={"A": "1"}, cwd="/w", log="/w/log",
          tmp="/w/.s/tmp", pid_file="/w/.s/pid", bin_dir="/venv/bin", group="map-1"),
    m.Run(id=2, argv=["pyflyte-execute"], env={}, cwd="/w", log="/l", tmp="/t", pid_file="/p", bin_dir="/b"),
    m.Kill(pid=10, id=1, sig=15), m.Drain(), m.Done(id=1),
    m.Ready(pid=9, flytekit="1.16.8", flytekit_file="/f/__init__.py", python="3.11", threads=1,
            site_dirs={"/site": 123, "/user-site": None}),
    m.Started(id=1, pid=10, start_time=None, reused=True), m.Failed(id=2, error="fork failed: no memory"),
    m.Exit(pid=10, code=-9),
]


def test_every_kind_goes_over_the_wire_and_back():
    for message in EVERY_KIND:
        line = m.encode(message)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert json.loads(line)["kind"] == type(message).__name__.lower()
        assert m.decode(line) == message


def test_a_stream_cut_anywhere_gives_the_same_messages():
    stream = b"".join(m.encode(message) for message in EVERY_KIND)
    for cut in range(0, len(stream), 7):
        lines = m.Lines()
        got = lines.feed(stream[:cut]) + lines.feed(stream[cut:])
        assert got == EVERY_KIND and lines.buffer == b""
