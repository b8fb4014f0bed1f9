"""Speed work on the retrieval path must not change what it returns (issue 45).

A fixed store (300 facts of three holders over six sessions, SUPERSEDES chains, conflicts, several concepts,
fixed times and 64-d vectors from a seeded generator) and 40 fixed queries: every bundle's items in order
(fact id, alias, seed, score to 12 digits, group, a digest of its state), its seeds with their per-route ranks, and the
traversal's additions are compared with ``tests/data/retrieval_identity.json``, written by the code before
the issue-45 cuts. A deliberate change of ranking regenerates it:

    .venv/bin/python tests/test_retrieval_identity.py --regen
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, Supersede, apply_batch  # noqa: E402
from graph.embedded import EmbeddedStore  # noqa: E402
from graph.models import Fact, Turn  # noqa: E402
from retrieval.retrieve import RetrievalConfig, retrieve  # noqa: E402
from retrieval.seeds.index import RouteIndexCache  # noqa: E402

GOLDEN = ROOT / "tests" / "data" / "retrieval_identity.json"
WORDS = ("hiking beach knee coffee tea sushi flight window seat vegan allergy peanut running swim berlin paris tokyo "
         "dog cat piano guitar novel jazz tennis yoga cooking garden bike train hotel museum concert budget sister "
         "doctor gym diet sleep").split()
DIM, N = 64, 300
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
QUERIES = ["what does Caroline say about hiking", "coffee or tea", "anything about my knee?",
           "summarize what we talked about", "what did you recommend for the flight", "vegan sushi in tokyo",
           "the concert and the museum", "my sister and the dog", "when did I start running", "budget for the hotel"]


def _build(u: str) -> tuple[EditBatch, dict[str, np.ndarray]]:
    rng = np.random.default_rng(45)
    holders = ("user", "user", "Caroline", "assistant")
    edits: list[Any] = [CreateConcept(concept_id=f"{u}:c{i}", name=f"topic {i}") for i in range(6)]
    turns, vec = [], {}
    for i in range(N):
        s, at = f"s{i // 50}", T0 + timedelta(days=i // 50, minutes=i)
        holder = holders[i % 4]
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12))))
        text = f"{holder}: {words}" if holder not in ("user", "assistant") else words
        role = "assistant" if holder == "assistant" else "user"
        turns.append(Turn(turn_id=f"{u}:t{i // 2}", user_id=u, session_id=s, seq=i // 2, role=role, text=text, at=at)
                     if i % 2 == 0 else None)
        f = Fact(fact_id=f"{u}:f{i:03d}", user_id=u, statement=text, holder=holder, session_id=s, observed_at=at,
                 recorded_at=at, source_turn_ids=(f"{u}:t{i // 2}",))
        e = rng.normal(size=DIM).astype(np.float32)
        vec[text] = e / np.linalg.norm(e)
        edits.append(AttachFact(fact=f, concept_id=f"{u}:c{i % 6}", embedding=tuple(vec[text].tolist())))
    for start in range(0, 80, 4):
        for k in range(3):
            edits.append(Supersede(new_fact_id=f"{u}:f{start + k + 1:03d}", old_fact_id=f"{u}:f{start + k:03d}"))
    for k in range(100, 120, 2):
        edits.append(Conflict(a=f"{u}:f{k:03d}", b=f"{u}:f{k + 1:03d}"))
    return EditBatch(user_id=u, session_id="s0", session_hash="h", turns=[t for t in turns if t], edits=edits), vec


def _digest(x: Any) -> str:
    return hashlib.sha1(json.dumps(x, sort_keys=True).encode()).hexdigest()[:12]


def bundles(tmp: Path) -> list[dict[str, Any]]:
    u = "ident"
    batch, vec = _build(u)
    store = EmbeddedStore(tmp / "store")
    store.setup()
    _, cs = apply_batch(store.load_snapshot(u), batch)
    store.commit(cs)

    def embed(texts: list[str]) -> np.ndarray:
        out = []
        for t in texts:  # turn texts are "role: text"; a fact's retrieval text may carry its holder
            v = vec.get(t) if t in vec else vec.get(t.split(": ", 1)[-1])
            out.append(v if v is not None else np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32))
        return np.stack(out)

    cache = RouteIndexCache(embed)
    rng = np.random.default_rng(7)
    out = []
    try:
        for qi in range(30):
            q = QUERIES[qi % len(QUERIES)]
            qv = rng.normal(size=DIM).astype(np.float32)
            b = cache.use(store, u, lambda index: retrieve(store, u, q, qv.tolist(), RetrievalConfig(k=8), now=T0
                                                           + timedelta(days=30), index=index))
            out.append({"query": q, "items": [[i.fact.fact_id, i.alias, i.seed, None if i.score is None else
                                                round(i.score, 12), i.group, _digest(i.state.model_dump(mode="json"))]
                                               for i in b.items],
                        "seeds": [[s.fact_id, round(s.score, 12), s.routes, s.window] for s in b.explain.seeds],
                        "added": b.explain.added_by_traversal, "by_turn": b.explain.added_by_update_turn})
    finally:
        cache.close()
        store.close()
    return out


def test_retrieval_unchanged(tmp_path: Path) -> None:
    got = bundles(tmp_path)
    want = json.loads(GOLDEN.read_text())
    assert sum(len(b["items"]) for b in got) > 200  # the store is not trivially empty
    for g, w in zip(got, want, strict=True):
        assert g == w, f"retrieval changed for {g['query']!r}"


if __name__ == "__main__" and "--regen" in sys.argv:
    import tempfile

    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(bundles(Path(tempfile.mkdtemp())), separators=(',', ':'), sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
