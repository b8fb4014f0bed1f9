"""Writer subprocess for the crash tests: commits sessions in a loop and prints each acknowledged one.

    python tests/crash_writer.py embedded /tmp/store [--start N]
    python tests/crash_writer.py neo4j bolt://127.0.0.1:7687 [--start N]

The first line is ``OPEN clean`` or ``OPEN recovered`` (the embedded store replayed a torn WAL).
Every line ``ACK <user> <n>`` is printed only after ``commit`` returned, so the parent
that kills this process with SIGKILL knows exactly which sessions were acknowledged. Session ``n``
writes 2 turns, ``--facts`` facts (the first superseding the user's previous fact), a concept on first use, its
edits and the session record, all in one commit. Every 7th iteration also writes a scratch user
(``SCRATCH <user> <n>`` is printed before that write starts) and purges it (``ACK-PURGE <user> <n>``
after ``purge_user`` returned), so crashes also land inside purges, and the parent knows when the
scratch user must be empty: after an ``ACK-PURGE`` with no ``SCRATCH`` line after it. Each line goes
out in one ``write`` (``say``), newline included: ``print`` writes the text and the newline apart where
PYTHONUNBUFFERED is set, so a kill between them left a torn line. Imports only graph/ and numpy: a kill
test must restart this process dozens of times in a minute.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.edits import AttachFact, CreateConcept, EditBatch, Supersede, apply_batch  # noqa: E402
from graph.models import Fact, Turn  # noqa: E402

USERS = ("ada", "bo", "cy")
SCRATCH = "scratch"
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
TURNS_PER_SESSION = 2
SESSION_SIZES = (3, 60)  # --facts values the crash test alternates


def user_of(n: int) -> str:
    return USERS[n % len(USERS)]


def session_id(n: int) -> str:
    return f"s{n}"


def fact_ids(u: str, n: int, per_session: int) -> list[str]:
    return [f"{u}:f{n}-{k}" for k in range(per_session)]


def batch(u: str, n: int, snapshot_facts: set[str], has_concept: bool, rng: np.random.Generator,
          per_session: int = 3, dim: int = 16) -> EditBatch:
    sid = session_id(n)
    turns = [Turn(turn_id=f"{sid}:{i}", user_id=u, session_id=sid, seq=i, role="user",
                  text=f"turn {i} of session {n} for {u}", at=T0) for i in range(TURNS_PER_SESSION)]
    edits: list[Any] = [] if has_concept else [CreateConcept(concept_id=f"{u}:c", name="things")]
    ids = fact_ids(u, n, per_session)
    for k, fid in enumerate(ids):
        emb = rng.normal(size=dim)
        f = Fact(fact_id=fid, user_id=u, statement=f"fact {k} of session {n}", source_turn_ids=(turns[0].turn_id,),
                 session_id=sid, observed_at=T0)
        edits.append(AttachFact(fact=f, concept_id=f"{u}:c", embedding=tuple(float(x) for x in emb)))
    prev = f"{u}:f{n - len(USERS)}-0"
    if prev in snapshot_facts:
        edits.append(Supersede(new_fact_id=ids[0], old_fact_id=prev, reason="newer"))
    return EditBatch(user_id=u, session_id=sid, session_hash=f"h{n}", turns=turns, edits=edits)


def say(line: str) -> None:
    """One line to stdout in one ``write`` (atomic on a pipe), whatever Python's buffering mode."""
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def open_store(backend: str, where: str, dim: int = 16, checkpoint_bytes: int | None = None,
               setup: bool = True) -> Any:
    if backend == "embedded":
        from graph.embedded import EmbeddedStore

        store: Any = EmbeddedStore(where, checkpoint_threshold=checkpoint_bytes)
    else:
        from graph.neo4j import Neo4jStore

        store = Neo4jStore(where, embedding_dim=dim)
    if setup:
        store.setup()
    return store


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("backend", choices=["embedded", "neo4j"])
    ap.add_argument("where", help="store directory (embedded) or bolt URI (neo4j)")
    ap.add_argument("--start", type=int, default=0, help="first session number")
    ap.add_argument("--count", type=int, default=10**9)
    ap.add_argument("--facts", type=int, default=3, help="facts per session (large ones stress the WAL)")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--checkpoint-bytes", type=int, default=None, help="embedded: WAL size that triggers a checkpoint")
    ap.add_argument("--no-setup", action="store_true", help="neo4j: schema exists (setup waits for indexes)")
    args = ap.parse_args(argv)
    store = open_store(args.backend, args.where, args.dim, args.checkpoint_bytes, not args.no_setup)
    say("OPEN " + ("recovered" if getattr(store, "recovered_wal", False) else "clean"))
    rng = np.random.default_rng(args.start)
    for n in range(args.start, args.start + args.count):
        u = user_of(n)
        snap = store.load_snapshot(u)
        _, cs = apply_batch(snap, batch(u, n, set(snap.facts), f"{u}:c" in snap.concepts, rng,
                                    args.facts, args.dim), T0)
        store.commit(cs)
        say(f"ACK {u} {n}")
        if n % 7 == 0:  # a scratch user written then purged: crashes also land inside purges
            say(f"SCRATCH {SCRATCH} {n}")
            s = store.load_snapshot(SCRATCH)
            _, cs = apply_batch(s, batch(SCRATCH, n, set(s.facts), f"{SCRATCH}:c" in s.concepts, rng,
                                      args.facts, args.dim), T0)
            store.commit(cs)
            store.purge_user(SCRATCH)
            say(f"ACK-PURGE {SCRATCH} {n}")
    store.close()


if __name__ == "__main__":
    main()
