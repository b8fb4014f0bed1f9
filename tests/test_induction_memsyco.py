"""The judge-free MemSyco check (evaluation/memsyco_selection.py): fields, matching rule, and behaviour on
hand-written update dialogues with the real MiniLM embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore.memory import Memory
from graph.embedded import EmbeddedStore
from evaluation.memsyco_selection import MemsycoEvalConfig, evaluate_memsyco
from induction.offline import OfflineExtractor
from induction.pipeline import Ingestor
from llmclients.embeddings import HashEmbedder

DATA = Path("/work/shared/data/memsyco-bench")


def _row(rid: str, turns: list[str], question: str, current: str, outdated: str) -> dict[str, Any]:
    dialogue = []
    for t in turns:
        dialogue += [{"role": "user", "content": t}, {"role": "assistant", "content": "I understand."}]
    return {"id": rid, "task": "valid_memory_selection", "dialogue": dialogue, "question": question,
            "memory": {"policy": "update", "items": [{"content": outdated, "type": "preference", "status": "outdated"},
                                                     {"content": current, "type": "preference", "status": "current"}]},
            "evaluation": {"reference_answer": "x", "rubric": {"a": "b"}}, "metadata": {"subtype": "reversal"}}


ROWS = [
    _row("r1", ["I love hiking in the mountains every weekend, it is my favourite way to relax.",
                "My sister lives in Lisbon and works as a nurse.",
                "These days I no longer enjoy hiking; I now prefer lazy beach trips with a good book."],
         "Can you suggest a relaxing weekend trip for me?",
         "Now prefers lazy beach trips with a book.", "Loves hiking in the mountains every weekend."),
    _row("r2", ["I always drink black coffee in the morning, strong and without sugar.",
                "I switched to green tea because coffee makes me jittery, so no more coffee for me."],
         "What should I drink tomorrow morning?",
         "Drinks green tea instead of coffee.", "Drinks strong black coffee every morning."),
]


def _mem(tmp_path: Path, embedder: Any) -> Memory:
    s = EmbeddedStore(tmp_path / "store")
    s.setup()
    return Memory(s, embedder)


def test_report_fields_on_the_dev_rows(tmp_path: Path) -> None:
    if not DATA.exists():
        pytest.skip("benchmark data folder not present")
    m = _mem(tmp_path, HashEmbedder(256))
    seen: list[int] = []
    rep = evaluate_memsyco(DATA, Ingestor(m, OfflineExtractor()), MemsycoEvalConfig(limit=3), lambda n, t: seen.append(n))
    assert rep.n_rows == 3 and len(rep.rows) == 3 and seen == [1, 2, 3] and rep.extractor == "offline"
    for k in ("current_hit", "outdated_leak", "order", "current_valid", "outdated_leak_any"):
        assert 0.0 <= getattr(rep, k) <= 1.0
    assert all(r.facts > 0 for r in rep.rows) and rep.match_threshold == 0.45


@pytest.mark.slow
def test_updates_are_found_and_marked_with_minilm(tmp_path: Path) -> None:
    from llmclients.embeddings import EmbedderConfig, make_embedder

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "valid_memory_selection.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS))
    m = _mem(tmp_path, make_embedder(EmbedderConfig()))
    rep = evaluate_memsyco(tmp_path / "d", Ingestor(m, OfflineExtractor()), MemsycoEvalConfig())
    assert rep.n_rows == 2
    for r in rep.rows:
        assert r.current_hit and r.current_valid, r
        assert not r.outdated_leak and r.outdated_fact, r  # the old preference was stored and arrives superseded
        assert r.order
