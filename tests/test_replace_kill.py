"""`import --replace` is one transaction (GraphStore.replace_user): SIGKILL at random moments of a
process that keeps swapping a user's memory between two versions never leaves the user with none
or with a mix, on both backends. bench/replace_kill.py runs the same with more kills and the CLI."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from replace_writer import USER, open_store, statements, version

from graph.portable import import_user

WRITER = Path(__file__).with_name("replace_writer.py")
A = {f"A {i}" for i in range(120)}
B = {f"B {i}" for i in range(120)}


def kill_rounds(kind: str, where: str, rounds: int, seed: int) -> list[str]:
    """Start the writer, kill it at a random moment, check; returns per round what the user held and how many
    replaces were acknowledged before the kill (e.g. 'B7')."""
    rng = random.Random(seed)
    store = open_store(kind, where)
    store.purge_user(USER)
    import_user(store, version("A"))  # the user exists before the first kill
    store.close()
    found = []
    for _ in range(rounds):
        p = subprocess.Popen([sys.executable, str(WRITER), kind, where], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "OPEN"
        first = p.stdout.readline().split()  # one replace done: the process is in its swap loop
        assert first and first[0] == "ACK", first
        time.sleep(rng.uniform(0.0, 2.5))  # a replace takes ~0.5-1.5 s (embedded: the tx, then the scrub)
        p.kill()
        p.wait()
        acked = [first[1]] + [ln.split()[1] for ln in p.stdout.read().splitlines() if ln.startswith("ACK")]
        store = open_store(kind, where)
        try:
            held = statements(store)
        finally:
            store.close()
        what = "A" if held == A else "B" if held == B else "none" if not held else "mix"
        found.append(f"{what}{len(acked)}")
        assert what in ("A", "B"), f"after a kill the user held {what} ({len(held)} facts)"
    return found


def acks(found: list[str]) -> int:
    return sum(int(f[1:]) for f in found)


def test_embedded_replace_survives_kill9(tmp_path: Path) -> None:
    found = kill_rounds("embedded", str(tmp_path / "store"), 6, seed=1)
    assert acks(found) >= 6, found  # every kill landed in the swap loop


@pytest.mark.neo4j
def test_neo4j_replace_survives_kill9(neo4j_uri: str) -> None:
    found = kill_rounds("neo4j", neo4j_uri, 6, seed=2)
    assert acks(found) >= 6, found
