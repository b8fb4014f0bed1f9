"""BEAM and MemSyco-Bench through the harness, on small fixtures written in each benchmark's own format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.beam import beam_episodes
from evaluation.harness import Harness, HarnessConfig
from evaluation.locomo import locomo_episodes
from evaluation.memsyco import memsyco_report
from evaluation.report import build_report, markdown
from memcore.memory import Memory
from induction.pipeline import make_ingestor
from graph.embedded import EmbeddedStore
from induction.session import SessionFormatError
from llmclients.embeddings import HashEmbedder


def _msg(i: int, role: str, text: str, anchor: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "id": i, "content": text}
    if anchor:
        m["time_anchor"] = anchor
    return m


def write_beam(root: Path) -> Path:
    chat = [
        {"batch_number": 1, "time_anchor": None, "turns": [
            [_msg(0, "user", "My first sprint ends on March 29 and covers user login. ->-> 1,1", "March-15-2024"),
             _msg(1, "assistant", "Great, let us plan the login work for that sprint.")],
            [_msg(2, "user", "The dashboard API takes about 400ms per request right now."),
             _msg(3, "assistant", "Caching could bring the dashboard API latency down.")]]},
        {"batch_number": 2, "time_anchor": None, "turns": [
            [_msg(4, "user", "After the caching tweaks the dashboard API answers in about 250ms.", "April-05-2024"),
             _msg(5, "assistant", "That is a solid improvement for the dashboard.")]]},
    ]
    pq = {
        "information_extraction": [{"question": "When does my first sprint end?", "answer": "March 29",
                                    "difficulty": "easy", "source_chat_ids": [0]}],
        "knowledge_update": [{"question": "What is the average response time of the dashboard API?", "answer": "About 250ms",
                              "source_chat_ids": {"original_info": [2], "updated_info": [4]}}],
        "abstention": [{"question": "What did my manager say about the launch?", "ideal_response": "Not mentioned."}],
        "summarization": [{"question": "Summarize the dashboard work.", "ideal_summary": "Caching cut latency.",
                           "source_chat_ids": [3, 99]}],  # an assistant message, and an id no message has
    }
    d = root / "100K" / "1"
    d.mkdir(parents=True)
    (d / "chat.json").write_text(json.dumps(chat))
    (d / "probing_questions.json").write_text(json.dumps(pq))
    (d / "topic.json").write_text(json.dumps({"title": "budget tracker"}))
    return root


def test_beam_episodes_and_run(tmp_path: Path, embedded_memory: Memory) -> None:
    root = write_beam(tmp_path / "beam")
    # a tier folder or the folder above it
    [ep] = beam_episodes(root / "100K")
    [ep2] = beam_episodes(root)
    assert ep.episode_id == "1" and ep2.episode_id == "100K/1" and len(ep.sessions) == 2
    q = {x.category: x for x in ep.questions}
    assert q["knowledge_update"].evidence_ids == ("2", "4") and not q["abstention"].scored
    # the generator's plan index is not part of what the user said
    assert ep.sessions[0].turns[0].text == "My first sprint ends on March 29 and covers user login."
    run = Harness(make_ingestor(embedded_memory), HarnessConfig(k=5, budget=200, baselines=("naive_rag", "full_context"))).run([ep])
    rep = build_report(run, "beam", {}, n_boot=50)
    assert rep["n_questions"] == 3  # abstention has no evidence: counted, not scored
    assert set(rep["by_category"]) == {"information_extraction", "knowledge_update", "summarization"}
    s = next(r for r in run.questions if r.category == "summarization")
    assert s.gold == ["3"] and s.unresolved == ["99"]
    assert rep["unresolved_evidence"]["ids_not_in_history"] == 1
    assert rep["unresolved_evidence"]["questions_without_any_evidence"] == 1
    # the offline extractor keeps nothing an assistant said: a question whose only evidence is an
    # assistant message cannot be recovered from facts, while full context has it
    assert s.gold_with_fact == 0 and s.outcomes["evomem"].n_hit == 0 and s.outcomes["full_context"].n_hit == 1
    assert rep["baselines"]["full_context"]["complete_retrieval_rate"] == 1.0
    assert "beam evaluation" in markdown(rep)


def test_beam_malformed(tmp_path: Path) -> None:
    root = write_beam(tmp_path / "beam")
    chat = root / "100K" / "1" / "chat.json"
    data = json.loads(chat.read_text())
    del data[1]["turns"][0][0]["content"]
    chat.write_text(json.dumps(data))
    with pytest.raises(SessionFormatError) as e:
        beam_episodes(root)
    assert str(chat) in str(e.value) and "record 1" in str(e.value) and "content" in str(e.value)
    with pytest.raises(SessionFormatError, match="chat.json"):
        beam_episodes(tmp_path)


def _row(rid: str, task: str, dialogue: list[tuple[str, str]], question: str, items: list[tuple[str, str]],
         policy: str) -> str:
    return json.dumps({"id": rid, "task": task, "dialogue": [{"role": r, "content": c} for r, c in dialogue],
                       "question": question, "memory": {"policy": policy, "items": [
                           {"content": c, "type": "preference", "status": s} for c, s in items]},
                       "evaluation": {"reference_answer": "r"}, "metadata": {"subtype": "reversal"}})


def write_memsyco(root: Path) -> Path:
    root.mkdir(parents=True)
    old, new = "I love spicy Thai food for dinner every week.", "I no longer eat spicy food and now prefer mild Japanese dishes."
    vms = [_row(f"v{i}", "valid_memory_selection",
                [("user", old), ("assistant", "Noted, spicy Thai it is."), ("user", "My sister visits on Sundays for lunch."),
                 ("user", new)], "Suggest a dinner place for me tonight.", [(old, "outdated"), (new, "current")], "update")
           for i in range(2)]
    (root / "valid_memory_selection.jsonl").write_text("\n".join(vms) + "\n")
    scope = _row("s1", "contextual_scope_control",
                 [("user", "At work I prefer short meetings with a written agenda."), ("assistant", "Understood.")],
                 "How should I plan the family reunion?", [("User prefers short meetings with an agenda at work.", "active")],
                 "constrain_to_scope")
    (root / "contextual_scope_control.jsonl").write_text(scope + "\n")
    return root


def test_memsyco_report(tmp_path: Path, embedded_memory: Memory) -> None:
    root = write_memsyco(tmp_path / "ms")
    rep = memsyco_report(root, make_ingestor(embedded_memory), k=10, threshold=0.3)
    # both rows state the current preference in one sentence of their own: our retrieval must find it
    assert rep["n_rows"] == 2 and rep["current_hit"] == 1.0 and set(rep["ci"]) >= {"current_hit", "outdated_leak"}
    # NaiveRAG over 3 user turns with K=10 retrieves every turn: both items always "hit", nothing is marked
    b = rep["baselines"]["naive_rag"]
    assert (b["current_hit"], b["outdated_leak"], b["n_rows"]) == (1.0, 1.0, 2)
    t = rep["tasks"]["contextual_scope_control"]
    assert t["n_rows"] == 1 and t["marker"] == "scoped" and t["baseline"]["naive_rag"]["gold_retrieved"] == 1.0
    # the one work-scoped preference is retrieved and arrives marked as scoped (the baseline cannot mark)
    assert (t["gold_retrieved"], t["marked"], t["errors"]) == (1.0, 1.0, 0)
    md = markdown(rep)
    assert "valid_memory_selection" in md and "matching `ordered`" in md
    # these rows are not among the annotated dev rows: no gold-turn figures, and none are made up
    assert rep["matching"] == "ordered" and rep["gold_turns"] is None and rep["matching_agreement"] is None
    assert "annotated gold turns" not in md
    gold = {"n_rows": 2, "current_hit": 1.0, "outdated_leak": 0.5, "current_valid": 0.5, "wrong_way": 0.0}
    assert "(2 rows): current hit 1.000, leak 0.500" in markdown(rep | {"gold_turns": gold})
    with pytest.raises(SessionFormatError, match="none of"):
        memsyco_report(tmp_path, make_ingestor(embedded_memory))


def test_memsyco_malformed_row(tmp_path: Path, embedded_memory: Memory) -> None:
    root = write_memsyco(tmp_path / "ms")
    f = root / "contextual_scope_control.jsonl"
    row = json.loads(f.read_text())
    del row["question"]
    f.write_text(f.read_text() + json.dumps(row) + "\n")
    with pytest.raises(SessionFormatError) as e:
        memsyco_report(root, make_ingestor(embedded_memory), tasks=["contextual_scope_control"])
    assert str(f) in str(e.value) and "record 1" in str(e.value) and "question" in str(e.value)


def test_locomo_dev_slice_floor(tmp_path: Path, bench_data: Path) -> None:
    """Real LoCoMo dev data, small slice: conv-26, first 4 sessions (45 scored questions), K=10, budget 600,
    hashing embedder (256-d), offline extractor — a few seconds.

    Measured 2026-12-01: complete retrieval 0.556, coverage 0.567; naive RAG over turns 0.333, BM25 0.511.
    2026-12-04, with stemmed BM25 (session 17): 0.489 / 0.522 — one question under turn BM25; the floors
    were lowered to 0.45 and "BM25 minus one question" then (978cd01).
    2026-12-06 (issue 47, at 32a332a and with the working tree of that day): complete retrieval 0.867
    (39/45), coverage 0.900; naive RAG 0.333 (15/45), BM25 0.511 (23/45). The same in every run (word
    hashes, rules; PYTHONHASHSEED makes no difference), so the floors are today's figures with no margin:
    one question lost fails this test. Never lower a floor here without a line above that says why.
    """
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    mem = Memory(store, HashEmbedder(256))
    cfg = HarnessConfig(k=10, budget=600, limit_conversations=1, limit_sessions=4, baselines=("naive_rag", "bm25"),
                        ablations=False)
    run = Harness(make_ingestor(mem), cfg).run(locomo_episodes(bench_data / "locomo"))
    mem.close()
    rep = build_report(run, "locomo", {}, n_boot=0)
    assert rep["n_questions"] == 45
    # the report rounds to 4 places: 39/45 is reported as 0.8667
    assert rep["complete_retrieval_rate"] >= round(39 / 45, 4) and rep["coverage"] >= 0.9
    ours, bm25 = rep["complete_retrieval_rate"], rep["baselines"]["bm25"]["complete_retrieval_rate"]
    assert ours > rep["baselines"]["naive_rag"]["complete_retrieval_rate"] + 0.1
    assert ours >= bm25  # at least turn BM25 (today: 16 questions more)
    assert rep["context_tokens_mean"] <= 600
