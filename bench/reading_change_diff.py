"""Which dev-data sentences read differently under another version of ``induction/reading/change.py``
(``reverses``, and a negation only inside a concession, as the model adjudicator's gates read them).

A reading class changed for one benchmark's false edges must say what else it moves: this lists, per data
set (phrasing cases, MemSyco, LoCoMo, BEAM), every sentence whose reading differs.

    git show aec9c18:induction/reading/change.py > /tmp/old_change.py
    python bench/reading_change_diff.py --old /tmp/old_change.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.adjudication.rules import has_negation  # noqa: E402

SPLIT = re.compile(r"(?<=[.!?])\s+")


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def _conceded_only(mod: Any, s: str) -> bool:
    return has_negation(s) and not has_negation(mod.CONCESSIVE.regex.sub(" ", s))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="Another version of induction/reading/change.py.")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--show", type=int, default=40)
    a = ap.parse_args()
    old, new = _load(Path(a.old), "old_change"), _load(ROOT / "induction" / "reading" / "change.py", "new_change")
    data = Path(a.data)
    for name, files in [("phrasing", [ROOT / "evaluation" / "phrasing" / "cases.jsonl"]),
                        ("memsyco", sorted((data / "memsyco-bench").glob("*.jsonl"))),
                        ("locomo", [data / "locomo" / "locomo10.json"]),
                        ("beam", sorted((data / "beam").rglob("*.json*")))]:
        seen: set[str] = set()
        rev: list[str] = []
        neg: list[str] = []
        for f in files:
            txt = f.read_text()
            objs = [json.loads(x) for x in txt.splitlines() if x.strip()] if f.suffix == ".jsonl" else [json.loads(txt)]
            for s in (sent for o in objs for t in _strings(o) for sent in SPLIT.split(t)):
                if s in seen or len(s) > 2000:
                    continue
                seen.add(s)
                if old.reverses([s]) != new.reverses([s]):
                    rev.append(s)
                if _conceded_only(old, s) != _conceded_only(new, s):
                    neg.append(s)
        print(f"== {name}: {len(seen)} sentences; reverses changed {len(rev)}; conceded-only negation changed {len(neg)}")
        for s in rev[:a.show]:
            print("  REV", s[:200])
        for s in neg[:a.show]:
            print("  NEG", s[:200])


if __name__ == "__main__":
    main()
