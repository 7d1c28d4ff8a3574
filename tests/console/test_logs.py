"""GET /logs/<path>: task logs as text, never anything outside the logs folder."""

from __future__ import annotations

import http.client
import os

import requests


def raw_get(console, path: str) -> tuple[int, bytes]:
    """A GET whose path goes on the wire exactly as written (no client-side dot-segment removal)."""
    host, port = console.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    status, body = resp.status, resp.read()
    conn.close()
    return status, body


def test_log_is_served_as_text(console):
    logs = console.ctx.config.logs_dir
    (logs / "flytesnacks-development-abc" / "n0").mkdir(parents=True)
    (logs / "flytesnacks-development-abc" / "n0" / "attempt-0.log").write_text("hello from the task\n")
    resp = requests.get(f"{console.url}/logs/flytesnacks-development-abc/n0/attempt-0.log")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    assert resp.text == "hello from the task\n"


def test_follow_view_escapes_and_refreshes(console):
    (console.ctx.config.logs_dir / "x.log").write_text("<script>alert(1)</script>\n")
    resp = requests.get(f"{console.url}/logs/x.log?follow=1")
    assert resp.status_code == 200 and "text/html" in resp.headers["content-type"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in resp.text
    assert "<script>alert(1)" not in resp.text
    assert "http-equiv='refresh'" in resp.text


def test_missing_log_is_404(console):
    assert requests.get(f"{console.url}/logs/nope.log").status_code == 404


def test_traversal_out_of_the_logs_folder_is_404(console):
    secret = console.ctx.config.home / "url-signing.key"
    assert secret.exists()
    for path in ["/logs/../url-signing.key", "/logs/%2e%2e/url-signing.key", "/logs/..%2furl-signing.key",
                 "/logs/%2e%2e%2f%2e%2e%2fetc/passwd", "/logs//etc/passwd", "/logs/", "/logs/."]:
        status, body = raw_get(console, path)
        assert status == 404, (path, body)
        assert secret.read_bytes() not in body


def test_symlink_out_of_the_logs_folder_is_404(console):
    os.symlink(console.ctx.config.home / "url-signing.key", console.ctx.config.logs_dir / "key.log")
    assert requests.get(f"{console.url}/logs/key.log").status_code == 404


def test_log_streams_from_an_offset(console):
    log = console.ctx.config.logs_dir / "flytesnacks-development-str" / "n0-0.log"
    log.parent.mkdir(parents=True)
    log.write_text("line one\n")
    url = f"{console.url}/logs/flytesnacks-development-str/n0-0.log"
    first = requests.get(url, params={"offset": 0})
    assert first.text == "line one\n" and first.headers["X-Next-Offset"] == "9" and first.headers["X-Log-Size"] == "9"
    assert requests.get(url, params={"offset": 9}).text == ""
    with open(log, "a") as f:
        f.write("line two\n")
    more = requests.get(url, params={"offset": 9})
    assert more.text == "line two\n" and more.headers["X-Next-Offset"] == "18"
    # An offset past the end (the viewer of an older file) starts over.
    assert requests.get(url, params={"offset": 500}).text == "line one\nline two\n"
    assert requests.get(url, params={"offset": "-1"}).status_code == 400


def test_paths_that_name_no_file_are_404(console):
    for path in ["/logs/a%00b.log", "/logs/" + "a" * 5000, "/logs/" + "d/" * 3000 + "x.log"]:
        status, body = raw_get(console, path)
        assert status == 404, (path[:40], body[:200])
        assert b"no log file" in body and len(body) < 1000
