"""Writer subprocess for the replace kill test: swaps one user's memory between two versions forever.

    python tests/replace_writer.py embedded /tmp/store
    python tests/replace_writer.py neo4j bolt://127.0.0.1:7687

Versions A and B of user ``ada`` have disjoint fact ids and statements (``A 0..N``, ``B 0..N``), so a
half-applied replace is visible as a mix, an empty user as none. Each ``import_user(..., 'replace')``
is acknowledged with ``ACK <version>`` only after it returned. The parent kills this process with
SIGKILL at random moments and checks that the user holds exactly A or B.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.edits import AttachFact, CreateConcept, EditBatch, apply_batch  # noqa: E402
from graph.models import Fact, Turn  # noqa: E402
from graph.portable import UserExport, import_user  # noqa: E402
from graph.snapshot import Snapshot  # noqa: E402

USER = "ada"
FACTS = 120
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def version(tag: str) -> UserExport:
    turns = [Turn(turn_id=f"{tag}-t{i}", user_id=USER, session_id=f"{tag}-s", seq=i, role="user",
                  text=f"turn {i} of version {tag}", at=T0) for i in range(4)]
    edits: list[Any] = [CreateConcept(concept_id=f"{USER}:c:{tag}", name=f"things {tag}")]
    edits += [AttachFact(fact=Fact(fact_id=f"{USER}:{tag}{i}", user_id=USER, statement=f"{tag} {i}",
                                   source_turn_ids=(turns[i % 4].turn_id,), session_id=f"{tag}-s", observed_at=T0),
                         concept_id=f"{USER}:c:{tag}", embedding=tuple([0.25] * 16)) for i in range(FACTS)]
    snap, _ = apply_batch(Snapshot(user_id=USER), EditBatch(user_id=USER, session_id=f"{tag}-s", turns=turns,
                                                            edits=edits), T0)
    snap.version = 1
    return UserExport(snapshot=snap, turns=turns, embeddings={f: [0.25] * 16 for f in snap.facts})


def statements(store: Any) -> set[str]:
    return {f.statement for f in store.load_snapshot(USER).facts.values()}


def open_store(kind: str, where: str) -> Any:
    if kind == "embedded":
        from graph.embedded import EmbeddedStore

        store: Any = EmbeddedStore(where)
    else:
        from graph.neo4j import Neo4jStore

        store = Neo4jStore(where, embedding_dim=16)
    store.setup()
    return store


def main() -> None:
    kind, where = sys.argv[1], sys.argv[2]
    store = open_store(kind, where)
    versions = {t: version(t) for t in "AB"}
    print("OPEN", flush=True)
    i = 0
    while True:
        tag = "AB"[i % 2]
        import_user(store, versions[tag], mode="replace" if USER in store.users() else "new")
        print("ACK", tag, flush=True)
        i += 1


if __name__ == "__main__":
    main()
