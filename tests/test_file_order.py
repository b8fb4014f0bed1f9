"""The suite's file ordering (tests/file_order.py): listed slow files first, slowest first, rest stable."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from file_order import order_items, slow_order


def test_slow_files_come_first_slowest_first_and_the_rest_keep_their_order(tmp_path: Path) -> None:
    lst = tmp_path / "slow.txt"
    lst.write_text("# comment\n30.5 tests/test_b.py\n\n400 tests/test_c.py  # a second server\n")
    rank = slow_order(lst)
    assert rank == {"tests/test_c.py": 0, "tests/test_b.py": 1}
    ids = ["tests/test_a.py::x", "tests/test_b.py::y", "graph/ids.py::graph.ids", "tests/test_c.py::z",
           "tests/test_a.py::w"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    got = [it.nodeid for it in order_items(items, rank)]  # type: ignore[arg-type]
    assert got == ["tests/test_c.py::z", "tests/test_b.py::y", "tests/test_a.py::x", "graph/ids.py::graph.ids",
                   "tests/test_a.py::w"]


def test_a_missing_list_orders_nothing(tmp_path: Path) -> None:
    assert slow_order(tmp_path / "absent.txt") == {}
