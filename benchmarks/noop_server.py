"""`flytelite start` with the no-op plugin (benchmarks/noop_plugin.py) in place of every task plugin: what
flytelite itself costs per task, with no task process at all. Never a deployment's server.

Run as `python -m benchmarks.noop_server start <flytelite start's options>` from the repository's root;
BenchServer(noop=True) does.
"""

from __future__ import annotations

import logging
import sys

from benchmarks.noop_plugin import NoopPlugin
from flytelite import cli
from flytelite.plugins.registry import PluginRegistry

MODULE = "benchmarks.noop_server"


def main(argv: list[str]) -> int:
    args = cli.build_parser().parse_args(argv)
    if args.command != "start":
        raise SystemExit(f"{MODULE} runs `start` only, not {args.command!r}")
    logging.getLogger(__name__).warning(
        "the benchmarks' no-op server: tasks are NOT run, every attempt succeeds with zero values")
    return cli.start_server(args, PluginRegistry([NoopPlugin()]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
