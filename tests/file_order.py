"""Slow test files first, and a per-file time table at the end of every run.

Why: ``scripts/run-tests`` hands whole files to two xdist workers (``--dist loadfile``). xdist's default
queue puts the files with the MOST tests first, so a file with few but slow tests (a second Neo4j
server, a fine-tune) was dealt out last and one worker ran alone at the end: the same suite took 21 or
28 minutes depending on where those files fell. With ``--no-loadscope-reorder`` the queue keeps the
collection order, and this hook moves the files named in ``slow_files.txt`` to the front, slowest
first (longest-job-first, which keeps two workers within about one file of each other).

``slow_files.txt`` holds ``seconds path`` lines measured by this module's own table (printed as
"slowest test files" after each run). A file missing from the list just keeps its place; a stale
list only costs balance, never coverage.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

_LIST = Path(__file__).with_name("slow_files.txt")
_TIMES: dict[str, float] = defaultdict(float)


def slow_order(path: Path = _LIST) -> dict[str, int]:
    """Rank of each listed file (0 = slowest), from ``seconds path`` lines; '#' starts a comment."""
    rows: list[tuple[float, str]] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.split("#", 1)[0].strip()
        if line:
            seconds, name = line.split(None, 1)
            rows.append((float(seconds), name.strip()))
    rows.sort(key=lambda r: -r[0])
    return {name: rank for rank, (_, name) in enumerate(rows)}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def order_items(items: list[pytest.Item], rank: dict[str, int]) -> list[pytest.Item]:
    """Listed files first by rank, then the rest in collection order (stable)."""
    late = len(rank)
    return sorted(items, key=lambda it: rank.get(_file_of(it.nodeid), late))


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: a stand-in is dropped only for a test that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    drop = stand_ins_covered(items)
    if drop:
        config.hook.pytest_deselected(items=drop)
        gone = {id(it) for it in drop}
        items[:] = [it for it in items if id(it) not in gone]
    items[:] = order_items(items, slow_order())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # setup + call + teardown, so module fixtures (a Neo4j start, a training run) count to their file.
    _TIMES[_file_of(report.nodeid)] += report.duration


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not _TIMES:
        return
    total = sum(_TIMES.values())
    terminalreporter.write_sep("-", f"slowest test files (of {total:.0f} s summed over workers)")
    for name, seconds in sorted(_TIMES.items(), key=lambda kv: -kv[1])[:20]:
        terminalreporter.write_line(f"{seconds:8.1f} {name}")


# -- stand-ins: a quick test that a slower one in the same run fully covers ---------------------------
# ``@pytest.mark.stand_in("test_big")`` on ``test_small`` says: test_big asserts everything test_small does
# (and more, on more cases). A run that selects test_big (same file, same parameters) deselects test_small,
# so the full suite does not pay twice for the same assertions; a quick run (``-m "not slow"``) still runs
# test_small. Deselected, never skipped: the run's skip count is unchanged.
STAND_IN = "stand_in"


def stand_ins_covered(items: list[pytest.Item]) -> list[pytest.Item]:
    """The stand-in items whose covering test is among ``items``."""
    ids = {it.nodeid for it in items}
    out = []
    for it in items:
        mark = it.get_closest_marker(STAND_IN)
        if mark is None:
            continue
        name = it.name.split("[", 1)[0]
        cover = it.nodeid.replace(f"::{name}", f"::{mark.args[0]}", 1)
        if cover in ids:
            out.append(it)
    return out

