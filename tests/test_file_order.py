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


def test_a_stand_in_is_dropped_only_beside_the_test_that_covers_it() -> None:
    """A stand-in goes only where its covering test (same file, same parameters) is selected too."""
    from file_order import STAND_IN, stand_ins_covered

    def item(nodeid: str, cover: str | None = None) -> SimpleNamespace:
        mark = SimpleNamespace(args=(cover,)) if cover else None
        return SimpleNamespace(nodeid=nodeid, name=nodeid.split("::")[-1],
                               get_closest_marker=lambda name: mark if name == STAND_IN else None)

    small_e, small_n = item("tests/t.py::small[embedded]", "big"), item("tests/t.py::small[neo4j]", "big")
    other = item("tests/u.py::small[embedded]", "big")  # its cover would be in another file: kept
    big_e = item("tests/t.py::big[embedded]")
    got = stand_ins_covered([small_e, small_n, other, big_e])  # type: ignore[list-item]
    assert got == [small_e]  # big[neo4j] is not selected (e.g. -m "not neo4j"): small[neo4j] stays
    assert stand_ins_covered([small_e, small_n]) == []  # type: ignore[list-item]  # -m "not slow": all run
