"""benchmarks/run.py: what a whole run keeps when one of its sections fails."""

from __future__ import annotations

from benchmarks.common import Row
from benchmarks.run import measure
from benchmarks.table import render


def test_a_section_that_raises_gets_a_row_saying_so_and_the_other_sections_rows_are_kept():
    def broken() -> list[Row]:
        raise RuntimeError("initdb failed (1): could not change directory\nmore detail")

    every = {
        "first": ("first section", lambda: [Row("first row", [1.0, 2.0, 3.0], "s")]),
        "broken": ("broken section", broken),
        "last": ("last section", lambda: [Row("last row", [4.0], "s")]),
    }
    rows, failed = measure(every, ["first", "broken", "last"])
    assert [row.name for row in rows] == ["first row", "broken section: failed", "last row"]
    assert rows[1].note == "RuntimeError: initdb failed (1): could not change directory"
    assert failed == ["broken"]
    assert "broken section: failed" in render(rows)
