"""The harness on a two-session slice of LoCoMo conv-26, metric arithmetic checked against hand-computed values.

The slice below is copied from the real ``locomo10.json`` (first eight turns of sessions 1 and 2 of
conv-26, with their dates; a dated session 3 without turns, as in the real file). Most questions are
built so that the right answer is known without running anything: a question that *is* a turn record
(``"<speaker>: <text>"``) is that turn's nearest neighbour under any embedder, so NaiveRAG with K=1
retrieves exactly that turn. The real questions of the slice run alongside and are checked for
consistency only.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from retrieval.seeds.rank import ROUTES
from evaluation.harness import Episode, EvalQuestion, Harness, HarnessConfig, time_ordered
from evaluation.locomo import locomo_episodes, malformed_pieces
from evaluation.metrics import whitespace_tokens
from evaluation.report import build_report, markdown, write_outputs
from memcore.memory import Memory
from retrieval.render import render_context
from induction.adapters import normalize_evidence
from induction.pipeline import make_ingestor
from induction.session import Session, SessionFormatError

S1 = [
    {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! Good to see you! How have you been?"},
    {"speaker": "Melanie", "dia_id": "D1:2", "text": "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?"},
    {"speaker": "Caroline", "dia_id": "D1:3", "text": "I went to a LGBTQ support group yesterday and it was so powerful."},
    {"speaker": "Melanie", "dia_id": "D1:4", "text": "Wow, that's cool, Caroline! What happened that was so awesome? Did you hear any inspiring stories?"},
    {"speaker": "Caroline", "dia_id": "D1:5", "blip_caption": "a photo of a dog walking past a wall with a painting of a woman",
     "text": "The transgender stories were so inspiring! I was so happy and thankful for all the support."},
    {"speaker": "Melanie", "dia_id": "D1:6", "text": "Wow, love that painting! So cool you found such a helpful group. What's it done for you?"},
    {"speaker": "Caroline", "dia_id": "D1:7", "text": "The support group has made me feel accepted and given me courage to embrace myself."},
    {"speaker": "Melanie", "dia_id": "D1:8", "text": "That's really cool. You've got guts. What now?"},
]
S2 = [
    {"speaker": "Melanie", "dia_id": "D2:1", "text": "Hey Caroline, since we last chatted, I've had a lot of things happening to me. I ran a charity race for mental health last Saturday \u2013 it was really rewarding. Really made me think about taking care of our minds."},
    {"speaker": "Caroline", "dia_id": "D2:2", "text": "That charity race sounds great, Mel! Making a difference & raising awareness for mental health is super rewarding - I'm really proud of you for taking part!"},
    {"speaker": "Melanie", "dia_id": "D2:3", "text": "Thanks, Caroline! The event was really thought-provoking. I'm starting to realize that self-care is really important. It's a journey for me, but when I look after myself, I'm able to better look after my family."},
    {"speaker": "Caroline", "dia_id": "D2:4", "text": "I totally agree, Melanie. Taking care of ourselves is so important - even if it's not always easy. Great that you're prioritizing self-care."},
    {"speaker": "Melanie", "dia_id": "D2:5", "text": "Yeah, it's tough. So I'm carving out some me-time each day - running, reading, or playing my violin - which refreshes me and helps me stay present for my fam!"},
    {"speaker": "Caroline", "dia_id": "D2:6", "text": "That's great, Mel! Taking time for yourself is so important. You're doing an awesome job looking after yourself and your family!"},
    {"speaker": "Melanie", "dia_id": "D2:7", "text": "Thanks, Caroline. It's still a work in progress, but I'm doing my best. My kids are so excited about summer break! We're thinking about going camping next month. Any fun plans for the summer?"},
    {"speaker": "Caroline", "dia_id": "D2:8", "text": "Researching adoption agencies \u2014 it's been a dream to have a family and give a loving home to kids who need it."},
]
REC_D1_3 = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."  # 14 tokens
REC_D2_8 = ("Caroline: Researching adoption agencies \u2014 it's been a dream to have a family and give a loving home "
            "to kids who need it.")  # 23 tokens
REC_D2_1 = "Melanie: " + S2[0]["text"]  # 41 tokens
REC_D1_7 = "Caroline: The support group has made me feel accepted and given me courage to embrace myself."  # 16 tokens
REC_D2_5 = "Melanie: " + S2[4]["text"]

QA = [
    # designed: the question is a turn record, so NaiveRAG K=1 returns exactly that turn
    {"question": REC_D1_3, "answer": "LGBTQ support group", "evidence": ["D1:3"], "category": 4},           # 1/1
    {"question": REC_D2_8, "answer": "adoption agencies", "evidence": ["D2:8", "D1:7"], "category": 1},     # 1/2
    {"question": REC_D2_1, "answer": "a transgender mural", "evidence": ["D1:5"], "category": 2},          # 0/1
    {"question": REC_D1_7, "answer": "accepted", "evidence": ["D1:7; D3:2"], "category": 4},               # 1/1, D3:2 unresolved
    {"question": "What did Caroline say?", "answer": "x", "evidence": ["D"], "category": 2},              # malformed only
    {"question": REC_D2_5, "adversarial_answer": "violin", "evidence": ["D2:5"], "category": 5},          # not top level
    {"question": "Would Melanie be considered a member of the LGBTQ community?", "answer": "Likely no",
     "evidence": [], "category": 3},                                                                     # no evidence
    # real questions of this slice (consistency checks only)
    {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023", "evidence": ["D1:3"], "category": 2},
    {"question": "What did Caroline research?", "answer": "Adoption agencies", "evidence": ["D2:8"], "category": 1},
    {"question": "When did Melanie run a charity race?", "answer": "The sunday before 25 May 2023", "evidence": ["D2:1"],
     "category": 2},
]


def locomo_slice() -> list[dict[str, Any]]:
    return [{"sample_id": "conv-26", "qa": copy.deepcopy(QA), "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": copy.deepcopy(S1),
        "session_2_date_time": "1:14 pm on 25 May, 2023", "session_2": copy.deepcopy(S2),
        "session_3_date_time": "7:55 pm on 9 June, 2023"}}]


def write_slice(folder: Path, data: Any = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "locomo10.json"
    p.write_text(json.dumps(locomo_slice() if data is None else data))
    return p


def run_slice(embedded_memory: Memory, tmp_path: Path, **cfg: Any) -> Any:
    eps = locomo_episodes(write_slice(tmp_path / "data"))
    h = Harness(make_ingestor(embedded_memory), HarnessConfig(**cfg))
    return h.run(eps)


def test_slice_loads_with_evidence_bookkeeping(tmp_path: Path) -> None:
    [ep] = locomo_episodes(write_slice(tmp_path))
    assert ep.episode_id == "conv-26" and len(ep.sessions) == 2  # the dated session without turns is no session
    assert [len(s.turns) for s in ep.sessions] == [8, 8]
    assert ep.sessions[0].turns[4].text.endswith("[image: a photo of a dog walking past a wall with a painting of a woman]")
    q = {x.qid: x for x in ep.questions}
    assert q["conv-26#3"].evidence_ids == ("D1:7", "D3:2")
    assert q["conv-26#4"].evidence_ids == () and q["conv-26#4"].malformed_evidence == ("D",)
    assert not q["conv-26#5"].scored and q["conv-26#0"].scored
    assert malformed_pieces(("D8:6; D9:17", "D30:05", "D:11:26")) == ()


def test_two_session_slice_metrics_by_hand(embedded_memory: Memory, tmp_path: Path) -> None:
    run = run_slice(embedded_memory, tmp_path, k=1, budget=None, baselines=("naive_rag", "full_context", "bm25", "rrf"))
    rep = build_report(run, "locomo", {"store": "embedded"}, n_boot=200)
    by = {q.qid: q for q in run.questions}

    # evidence bookkeeping
    assert by["conv-26#3"].gold == ["D1:7"] and by["conv-26#3"].unresolved == ["D3:2"]
    assert by["conv-26#4"].n_gold == 0 and by["conv-26#4"].malformed == ["D"] and not by["conv-26#4"].scored
    assert by["conv-26#6"].n_gold == 0 and by["conv-26#6"].outcomes == {}  # no evidence: nothing to score
    u = rep["unresolved_evidence"]
    assert (u["ids_not_in_history"], u["malformed_entries"], u["questions_without_resolvable_evidence"],
            u["questions_without_any_evidence"], u["questions_partially_resolved"]) == (1, 1, 2, 1, 1)

    # NaiveRAG K=1 on the four designed scored questions + the three real ones (each retrieves its own turn?
    # not necessarily) -> check the designed ones per question, by hand:
    hits = {qid: by[qid].outcomes["naive_rag"].n_hit for qid in ("conv-26#0", "conv-26#1", "conv-26#2", "conv-26#3")}
    assert hits == {"conv-26#0": 1, "conv-26#1": 1, "conv-26#2": 0, "conv-26#3": 1}
    toks = {qid: by[qid].outcomes["naive_rag"].tokens for qid in hits}
    assert toks == {"conv-26#0": 14, "conv-26#1": 23, "conv-26#2": 41, "conv-26#3": 16}
    assert [whitespace_tokens(r) for r in (REC_D1_3, REC_D2_8, REC_D2_1, REC_D1_7)] == [14, 23, 41, 16]

    # Full context: every ingested turn -> every scored question complete; tokens = all 16 records.
    total = sum(whitespace_tokens(f"{t['speaker']}: {t['text']}") for t in S1 + S2) + whitespace_tokens(
        "[image: a photo of a dog walking past a wall with a painting of a woman]")
    assert total == 378  # = `wc -w` of the 16 records
    fc = rep["baselines"]["full_context"]
    assert (fc["hit_rate"], fc["coverage"], fc["complete_retrieval_rate"], fc["context_tokens_mean"]) == (1.0, 1.0, 1.0, 378.0)
    assert fc["n_questions"] == rep["n_questions"] == 7  # 4 designed + 3 real questions of categories 1-4

    # Category 5 stays out of the top level, but is reported on its own.
    assert rep["by_category"]["5"]["scored"] is False and rep["by_category"]["5"]["naive_rag"]["n_questions"] == 1
    assert rep["by_category"]["5"]["naive_rag"]["complete_retrieval_rate"] == 1.0  # its question is D2:5's record

    # Aggregates of the designed four, recomputed from the per-question numbers the harness stored:
    designed = [by[q] for q in hits]
    assert sum(r.outcomes["naive_rag"].n_hit > 0 for r in designed) / 4 == 0.75
    assert sum(r.outcomes["naive_rag"].n_hit / r.n_gold for r in designed) / 4 == 0.625
    assert sum(r.outcomes["naive_rag"].n_hit == r.n_gold for r in designed) / 4 == 0.5
    # ...and the report's top-level numbers are the same arithmetic over all seven scored questions.
    scored = [q for q in run.questions if q.scored]
    for name, summ in (("naive_rag", rep["baselines"]["naive_rag"]), ("evomem", rep)):
        n = len(scored)
        assert summ["hit_rate"] == round(sum(q.outcomes[name].n_hit > 0 for q in scored) / n, 4)
        assert summ["coverage"] == round(sum(q.outcomes[name].n_hit / q.n_gold for q in scored) / n, 4)
        assert summ["complete_retrieval_rate"] == round(sum(q.outcomes[name].n_hit == q.n_gold for q in scored) / n, 4)
        assert summ["context_tokens_mean"] == round(sum(q.outcomes[name].tokens for q in scored) / n, 1)
    assert rep["complete_retrieval_rate"] <= rep["coverage"] <= rep["hit_rate"]

    # Answer tokens in the context: NaiveRAG K=1 returns the asked turn itself, which holds "LGBTQ support
    # group" and "adoption agencies" whole; the mural question's turn (D1:5) is not retrieved.
    recall = {qid: by[qid].outcomes["naive_rag"].answer_recall for qid in hits}
    assert recall["conv-26#0"] == 1.0 and recall["conv-26#1"] == 1.0 and recall["conv-26#2"] < 1.0
    assert fc["answer_token_recall"] >= rep["baselines"]["naive_rag"]["answer_token_recall"]
    assert 0.0 <= rep["answer_token_recall"] <= 1.0


def test_our_tokens_and_hits_are_those_of_the_rendered_context(embedded_memory: Memory, tmp_path: Path) -> None:
    run = run_slice(embedded_memory, tmp_path, k=3, budget=60, baselines=())
    assert {s.status for s in run.sessions} == {"committed"} and len(run.sessions) == 2
    q = next(r for r in run.questions if r.qid == "conv-26#0")
    # Re-render what the harness rendered: same tokens, same recovered turns.
    bundle = embedded_memory.retrieve("conv-26", REC_D1_3, k=3)
    ctx = render_context(bundle, 60)
    assert q.outcomes["evomem"].tokens == ctx.tokens <= 60
    turns = {t for i in ctx.included for t in bundle.by_id()[i].fact.source_turn_ids}
    assert q.outcomes["evomem"].n_hit == len({"D1:3"} & turns) == 1  # the sentence-level fact of D1:3 is the top seed
    # ablations: seeds only never has more items than K and the neighbour route's window seeds; no
    # Reasoning State is only measured with answers
    assert q.outcomes["no_traversal"].items <= 3 + sum(s.window for s in bundle.explain.seeds)
    assert "no_reasoning_state" not in q.outcomes
    assert q.gold_with_fact == 1


def test_no_future_leakage(embedded_memory: Memory, embedder: Any) -> None:
    """A question placed after session 1 cannot see session 2, for our system or the baselines."""
    s1 = Session(session_id="a1", user_id="u", turns=[{"role": "user", "text": "I adopted a cat named Mochi last week.",
                                                       "turn_id": "t1"}], started_at="2024-01-01T10:00:00")
    s2 = Session(session_id="a2", user_id="u", turns=[{"role": "user", "text": "My cat Mochi now hates the new vet.",
                                                       "turn_id": "t2"}], started_at="2024-02-01T10:00:00")
    qs = (EvalQuestion(qid="early", question="What about my cat Mochi?", category="x", evidence_ids=("t1", "t2"), after_session=1),
          EvalQuestion(qid="late", question="What about my cat Mochi?", category="x", evidence_ids=("t1", "t2")))
    # sessions given out of order: the harness ingests them in time order
    ep = Episode(episode_id="e", user_id="u", sessions=(s2, s1), questions=qs)
    assert [s.session_id for s in time_ordered(ep.sessions)] == ["a1", "a2"]
    run = Harness(make_ingestor(embedded_memory), HarnessConfig(k=5, budget=None, baselines=("full_context",))).run([ep])
    early, late = run.questions
    assert early.gold == ["t1"] and early.unresolved == ["t2"]
    assert early.outcomes["full_context"].items == 1 and early.outcomes["full_context"].n_hit == 1
    assert late.gold == ["t1", "t2"] and late.outcomes["full_context"].items == 2


def test_report_files(embedded_memory: Memory, tmp_path: Path) -> None:
    run = run_slice(embedded_memory, tmp_path, k=2, budget=80)
    rep = build_report(run, "locomo", {"store": "embedded", "extractor": "offline", "embedder": "hash"}, n_boot=50)
    for key in ("hit_rate", "coverage", "complete_retrieval_rate", "context_tokens_mean", "retrieval_p50_ms",
                "retrieval_p95_ms", "n_questions", "ingest_ms_per_session", "baselines", "ablations", "by_category",
                "unresolved_evidence", "ci", "differences", "paper_reference"):
        assert key in rep, key
    assert set(rep["baselines"]) == {"naive_rag", "bm25", "rrf", "naive_rag_budget", "full_context"}
    # no_reasoning_state needs answers; every seed route is also left out in turn
    assert set(rep["ablations"]) == {"no_traversal", "no_relational_states", *(f"no_route_{r}" for r in ROUTES)}
    assert rep["baselines"]["naive_rag_budget"]["context_tokens_mean"] <= 80
    paths = write_outputs(rep, tmp_path / "out", run.questions)
    names = {p.name for p in paths}
    assert {"report.json", "report.md", "questions.jsonl", "retrieval.png", "tokens_vs_complete.png", "by_category.png"} <= names
    assert json.loads((tmp_path / "out" / "report.json").read_text())["n_questions"] == rep["n_questions"]
    assert "| **evomem** |" in markdown(rep)
    assert (tmp_path / "out" / "retrieval.png").read_bytes()[:4] == b"\x89PNG"


def test_malformed_locomo_names_file_and_record(tmp_path: Path) -> None:
    bad = locomo_slice()
    del bad[0]["conversation"]["session_2"][3]["text"]
    p = write_slice(tmp_path, bad)
    with pytest.raises(SessionFormatError) as e:
        locomo_episodes(p)
    assert str(p) in str(e.value) and "record 0" in str(e.value) and "session_2[3].text" in str(e.value)
    (tmp_path / "locomo10.json").write_text('[{"sample_id": "conv-1"')  # truncated file
    with pytest.raises(SessionFormatError, match="not JSON"):
        locomo_episodes(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SessionFormatError, match="locomo10.json"):
        locomo_episodes(empty)


def test_real_file_two_session_slice(embedded_memory: Memory, bench_data: Path) -> None:
    """The real file with limits: conv-26, first two sessions; evidence elsewhere counts as unresolved."""
    REAL = bench_data / "locomo" / "locomo10.json"
    raw = json.loads(REAL.read_text())[0]
    in_slice = [q for q in raw["qa"] if q["category"] != 5 and any(e.strip().startswith(("D1:", "D2:")) for e in q["evidence"])]
    run = Harness(make_ingestor(embedded_memory), HarnessConfig(k=5, budget=200, limit_conversations=1, limit_sessions=2,
                                                       baselines=("naive_rag",), ablations=False)).run(locomo_episodes(REAL))
    assert len(run.sessions) == 2 and run.episodes == 1
    scored = [q for q in run.questions if q.scored]
    assert len(scored) == len(in_slice) > 5
    assert len(run.questions) == len(raw["qa"])  # every question is accounted for...
    rep = build_report(run, "locomo", {}, n_boot=0)
    # ...and "D8:6; D9:17" (a malformed pair) becomes two ids, both unresolved here, not lost.
    pair = next(q for q, r in zip(run.questions, raw["qa"]) if r["evidence"] == ["D8:6; D9:17"])
    assert pair.unresolved == ["D8:6", "D9:17"] and pair.n_gold == 0
    expected = sum(1 for r in raw["qa"] for e in normalize_evidence(r["evidence"]) if not e.startswith(("D1:", "D2:")))
    assert rep["unresolved_evidence"]["ids_not_in_history"] == expected
