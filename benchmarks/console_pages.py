"""Console rows: how fast the pages of large runs are served (a 10,000-item map task's items, a 2,000-node
dynamic workflow's execution page), each page fetched `runs` times from a real server after the runs finished.

    python -m benchmarks.run --only console
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from benchmarks.common import Row
from benchmarks.server_client import BenchServer
from flytelite.console.items_page import PAGE_SIZE

FILE = "console_wfs.py"
ITEMS, NODES = 10_000, 2_000
GOAL_S = 1.0


def console_rows(root: Path, runs: int) -> list[Row]:
    with BenchServer(root / "console") as bench:
        mapped = bench.pyflyte_run(FILE, "console_map_wf", "--n", str(ITEMS))
        bench.wait(mapped, timeout=3600, poll=0.5)
        fanned = bench.pyflyte_run(FILE, "console_dynamic_wf", "--n", str(NODES))
        bench.wait(fanned, timeout=3600, poll=0.5)
        execution = f"{bench.server.url}/console/projects/flytesnacks/domains/development/executions"
        items = f"{execution}/{mapped}/nodes/n1/items"
        pages = [
            (f"map of {ITEMS:,} items: the items, first page", items),
            (f"map of {ITEMS:,} items: the items, last page", f"{items}?page={ITEMS // PAGE_SIZE - 1}"),
            (f"map of {ITEMS:,} items: one item", f"{items}/{ITEMS - 1}"),
            (f"map of {ITEMS:,} items: the execution page", f"{execution}/{mapped}"),
            (f"dynamic workflow of {NODES:,} nodes: the execution page", f"{execution}/{fanned}"),
        ]
        rows = []
        for name, url in pages:
            times, size = [], 0
            for _ in range(runs):
                started = time.perf_counter()
                with urllib.request.urlopen(url, timeout=120) as resp:
                    body = resp.read()
                times.append(time.perf_counter() - started)
                size = len(body)
            rows.append(Row(f"console: {name}", times, "ms", goal=f"< {GOAL_S * 1000:.0f} ms",
                            note=f"{size / 1024:.0f} KiB").check("<", GOAL_S))
    return rows
