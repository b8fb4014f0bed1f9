"""The ingest pipeline on both backends: atomic session commit, idempotence, relations, failure paths,
LLM extractor/adjudicator logic against scripted chat models, concurrency and commit retries."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from memcore.memory import Memory
from graph.edits import AttachFact, EditBatch, apply_batch
from graph.models import Fact
from retrieval.retrieve import retrieve
from graph.snapshot import Snapshot
from induction.adjudication.llm import LLMAdjudicator
from induction.adjudication.rules import RuleAdjudicator
from induction.config import IngestConfig, LivingConceptsConfig, RuleAdjudicatorConfig
from induction.branch import OntologyBranch
from induction.extract import CandidateFact, ExtractionResult, LLMExtractor
from induction.offline import OfflineExtractor
from induction.pipeline import IngestError, Ingestor
from induction.session import Session
from llmclients.chat import ChatError, ChatResult


def sess(sid: str, *texts: str, user: str = "maya", at: str | None = "2025-08-10T18:00:00Z",
         roles: tuple[str, ...] | None = None) -> Session:
    roles = roles or tuple("user" for _ in texts)
    return Session.model_validate({"session_id": sid, "user_id": user, "started_at": at,
                                   "turns": [{"role": r, "text": t} for r, t in zip(roles, texts)]})


def counts(store: Any, user: str) -> dict[str, int]:
    return store.counts(user)


class ScriptedChat:
    """A ChatModel that replays scripted replies (text, dict, ChatResult or an exception to raise)."""

    name = "scripted"

    def __init__(self, *replies: Any):
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def complete(self, messages: list, *, max_tokens: int = 256, temperature: float = 0.0,
                 json_schema: dict | None = None, stop: list | None = None, logprobs: bool = False) -> ChatResult:
        self.calls.append({"messages": messages, "schema": json_schema})
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        if isinstance(r, ChatResult):
            return r
        return ChatResult(text=r if isinstance(r, str) else json.dumps(r), finish_reason="stop")


# ---------------------------------------------------------------- commit, idempotence, conflicts
def test_ingest_commits_turns_facts_edits_and_provenance(mem: Memory) -> None:
    s = sess("s1", "I really enjoy hiking in the mountains. I am vegetarian.", "Cool, noted!")
    rep = Ingestor(mem, OfflineExtractor()).ingest(s)
    c = counts(mem.store, "maya")
    assert rep.status == "committed" and rep.turns == 2 and rep.facts_added == 2 == c["Fact"]
    assert c["Turn"] == 2 and c["Session"] == 1 and c["DERIVED_FROM"] == 2
    assert c["Edit"] == rep.concepts_created + rep.facts_added and rep.llm_calls == 0
    snap = mem.store.load_snapshot("maya")
    assert snap.sessions == {"s1": s.content_hash()} and snap.version == rep.version == 1
    assert all(f.session_id == "s1" and f.source_turn_ids == ("s1:0",) for f in snap.facts.values())
    assert {e.session_id for e in snap.edits.values()} == {"s1"}
    hits = mem.store.vector_search("maya", mem.embedder.embed(["hiking mountains"])[0].tolist(), 5)
    assert hits and hits[0][0] in snap.facts  # embeddings were stored with the facts


def test_reingest_is_a_no_op_and_changed_content_is_refused(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor())
    s = sess("s1", "I really enjoy hiking in the mountains.")
    ing.ingest(s)
    before, v = counts(mem.store, "maya"), mem.store.load_snapshot("maya").version
    again = ing.ingest(s)
    assert again.status == "unchanged" and counts(mem.store, "maya") == before
    assert mem.store.load_snapshot("maya").version == v
    with pytest.raises(IngestError) as e:
        ing.ingest(sess("s1", "I really enjoy hiking in the hills."))
    assert e.value.kind == "session_conflict" and "different content" in str(e.value)
    clash = Session.model_validate({"session_id": "s2", "user_id": "maya",
                                    "turns": [{"role": "user", "text": "Hello there friend", "turn_id": "s1:0"}]})
    with pytest.raises(IngestError) as e2:
        ing.ingest(clash)
    assert e2.value.kind == "turn_conflict"
    assert counts(mem.store, "maya") == before


def test_change_cue_supersedes_and_retrieval_marks_it(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor())
    ing.ingest(sess("s1", "I really enjoy hiking in the mountains on weekends."))
    rep = ing.ingest(sess("s2", "These days I no longer enjoy hiking in the mountains on weekends.",
                          at="2025-10-12T09:30:00Z"))
    assert rep.supersessions == 1, rep
    snap = mem.store.load_snapshot("maya")
    (rel,) = snap.relations.values()
    assert rel.type == "SUPERSEDES" and snap.facts[rel.src].session_id == "s2" and "change cue" in rel.reason
    q = "hiking in the mountains"
    b = retrieve(mem.store, "maya", q, mem.embedder.embed([q])[0].tolist())
    val = {i.fact.session_id: i.state.validity for i in b.items}
    assert val == {"s1": "superseded", "s2": "current"}


def test_duplicates_are_not_stored_twice(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor())
    ing.ingest(sess("s1", "I am allergic to peanuts."))
    rep = ing.ingest(sess("s2", "I am allergic to peanuts!", at="2025-09-01T10:00:00Z"))
    assert rep.duplicates == 1 and rep.facts_added == 0 and rep.turns == 1
    assert counts(mem.store, "maya")["Fact"] == 1


def test_a_statement_repeated_in_a_later_turn_cites_both_turns(mem: Memory) -> None:
    # The repeat is not stored twice, but its turn said the fact: the fact cites it, so a route that
    # finds the later turn finds the fact (BEAM users paste a message twice; the gold cites either).
    s = sess("s1", "I am allergic to peanuts.", "Noted.", "I am allergic to peanuts.", "Got it.",
             roles=("user", "assistant", "user", "assistant"))
    rep = Ingestor(mem, OfflineExtractor()).ingest(s)
    snap = mem.store.load_snapshot("maya")
    (fact,) = [f for f in snap.facts.values() if f.holder == "user"]
    assert rep.duplicates == 1 and fact.source_turn_ids == ("s1:0", "s1:2")
    # a stored fact keeps its turns: the same words in a later session add no citation
    Ingestor(mem, OfflineExtractor()).ingest(sess("s2", "I am allergic to peanuts.", at="2025-09-01T10:00:00Z"))
    assert mem.store.load_snapshot("maya").facts[fact.fact_id].source_turn_ids == ("s1:0", "s1:2")


def test_within_session_update_and_never_across_holders(mem: Memory) -> None:
    s = sess("s1", "I really love spicy ramen for lunch every day.", "Noted.",
             "Lately I no longer love spicy ramen for lunch every day.", "I really love spicy ramen for lunch every day.",
             roles=("user", "assistant", "user", "Leo"))
    rep = Ingestor(mem, OfflineExtractor()).ingest(s)
    snap = mem.store.load_snapshot("maya")
    sup = [(snap.facts[r.src], snap.facts[r.dst]) for r in snap.relations.values() if r.type == "SUPERSEDES"]
    assert rep.supersessions == 1 and [(a.source_turn_ids, b.source_turn_ids) for a, b in sup] == [(("s1:2",), ("s1:0",))]
    assert any(f.holder == "Leo" for f in snap.facts.values())  # same words, other holder: a new fact


def test_opposite_polarity_is_a_conflict(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor())
    ing.ingest(sess("s1", "I like cold showers in the morning before work."))
    rep = ing.ingest(sess("s2", "I do not like cold showers in the morning before work.", at="2025-09-01T10:00:00Z"))
    assert rep.conflicts == 1 and rep.supersessions == 0


# ---------------------------------------------------------------- failure paths never lose or half-write
class _Boom:
    name = "boom"

    def adjudicate(self, res: Any, snap: Any) -> Any:
        raise RuntimeError("adjudicator bug")


def test_failing_adjudicator_keeps_facts_as_new(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor(), _Boom())  # type: ignore[arg-type]
    ing.ingest(sess("s1", "I really enjoy hiking in the mountains on weekends."))
    rep = ing.ingest(sess("s2", "These days I no longer enjoy hiking in the mountains on weekends.",
                          at="2025-10-12T09:30:00Z"))
    assert rep.status == "committed" and rep.facts_added == 1 and rep.supersessions == 0
    assert "adjudicator bug" in (rep.adjudication_fallback or "")
    rules = Ingestor(mem, OfflineExtractor(), _Boom(), IngestConfig(adjudicator="llm", on_adjudication_error="rules"))  # type: ignore[arg-type]
    rep2 = rules.ingest(sess("s3", "I no longer enjoy hiking in the mountains on weekends at all.", at="2025-11-01T09:00:00Z"))
    assert rep2.adjudication_fallback and rep2.facts_added == 1


class _Fixed:
    name = "fixed"
    needs_branch = False

    def __init__(self, facts: list[CandidateFact]):
        self.facts = facts

    def extract(self, session: Session, branch: OntologyBranch | None) -> ExtractionResult:
        return ExtractionResult(facts=self.facts)


def _cand(fid: str, statement: str, evidence: str, turn: str = "s1:0", kind: str = "preference") -> CandidateFact:
    return CandidateFact(fact_id=f"maya::f::{fid}", statement=statement, kind=kind, evidence=evidence,
                         source_turn_ids=(turn,), order=(0, 0), concept=("travel",))


def test_ungrounded_evidence_is_rejected_with_reason(mem: Memory) -> None:
    ing = Ingestor(mem, _Fixed([_cand("a", "Enjoys hiking", "I really enjoy hiking"),
                                _cand("b", "Hates the sea", "I hate the sea with passion")]))  # type: ignore[arg-type]
    rep = ing.ingest(sess("s1", "Honestly, I really   enjoy “hiking” a lot."))
    assert rep.facts_added == 1 and [r.item for r in rep.rejected] == ["maya::f::b"]
    assert "not found in its source turn" in rep.rejected[0].reason


def test_edit_refused_by_graph_rules_is_dropped_not_fatal(mem: Memory) -> None:
    ing = Ingestor(mem, OfflineExtractor())
    ing.ingest(sess("s1", "I really enjoy hiking in the mountains."))
    snap = mem.store.load_snapshot("maya")
    taken = next(iter(snap.facts))
    clash = _cand("x", "Other", "Something else entirely", turn="s2:0")
    clash = clash.model_copy(update={"fact_id": taken})  # an id that already exists: ATTACH must be refused
    ok = _cand("y", "Loves maps", "I love maps", turn="s2:0")
    rep = Ingestor(mem, _Fixed([clash, ok])).ingest(  # type: ignore[arg-type]
        sess("s2", "Something else entirely. I love maps.", at="2025-09-01T10:00:00Z"))
    assert rep.facts_added == 1 and any("duplicate_id" in r.reason for r in rep.rejected)


GOOD_EXTRACT = {"facts": [{"statement": "Enjoys hiking in the mountains", "kind": "preference", "holder": "user",
                           "evidence": "I really enjoy hiking in the mountains", "turn_ids": ["s1:0"],
                           "time": "last year", "concept": "travel/activities"},
                          {"statement": "Made up", "kind": "event", "evidence": "I went", "turn_ids": ["nope"]}]}


def test_llm_extractor_valid_reply(mem: Memory) -> None:
    chat = ScriptedChat(GOOD_EXTRACT)
    ing = Ingestor(mem, LLMExtractor(chat), RuleAdjudicator())  # type: ignore[arg-type]
    rep = ing.ingest(sess("s1", "I really enjoy hiking in the mountains, did lots of it last year."))
    assert rep.facts_added == 1 and rep.llm_calls == 1 and rep.concepts_created == 2
    assert any("not in this session" in r.reason for r in rep.rejected)
    f = next(iter(mem.store.load_snapshot("maya").facts.values()))
    assert f.qualifiers["when"] == "2024" and f.valid_from is not None and f.valid_from.year == 2024
    assert chat.calls[0]["schema"]["title"] == "ExtractResponse"
    prompt = chat.calls[0]["messages"][-1].content
    assert "[s1:0] user:" in prompt and "Session date: 2025-08-10" in prompt


@pytest.mark.parametrize("reply, kind", [
    ('{"facts": [', "malformed_json"),
    ({"facts": [{"statement": "x", "kind": "mood", "evidence": "x", "turn_ids": ["s1:0"]}]}, "schema"),
    ({"facts": "none"}, "schema"),
    (ChatError("model server timed out after 5s", "timeout"), "timeout"),
    ("I'm sorry, but I can't help with that request.", "refusal"),
    (ChatResult(text="", finish_reason="content_filter"), "refusal"),
])
def test_llm_extractor_failures_are_per_session_errors_with_no_write(mem: Memory, reply: Any, kind: str) -> None:
    ing = Ingestor(mem, LLMExtractor(ScriptedChat(reply)))  # type: ignore[arg-type]
    with pytest.raises(IngestError) as e:
        ing.ingest(sess("s1", "I really enjoy hiking in the mountains."))
    assert e.value.kind == "extraction" and f"({kind})" in str(e.value)
    assert mem.store.users() == [] or counts(mem.store, "maya")["Turn"] == 0


def test_llm_adjudicator_labels_are_checked(mem: Memory) -> None:
    Ingestor(mem, OfflineExtractor()).ingest(sess("s1", "I really enjoy hiking in the mountains on weekends."))
    old = next(iter(mem.store.load_snapshot("maya").facts))

    def reply_for(view_aliases: str) -> dict:
        return {"labels": [{"fact": "N1", "label": "supersedes", "targets": ["E1", "E9"], "reason": "changed"}],
                "concept_ops": [{"op": "MERGE", "concept": "C99", "into": "C1"}]}

    chat = ScriptedChat(reply_for(""))
    ing = Ingestor(mem, OfflineExtractor(), LLMAdjudicator(chat))  # type: ignore[arg-type]
    rep = ing.ingest(sess("s2", "These days I no longer enjoy hiking in the mountains on weekends.", at="2025-10-12T09:30:00Z"))
    assert rep.llm_calls == 1 and rep.supersessions == 1
    reasons = " ".join(r.reason for r in rep.rejected)
    assert "not among the offered candidates" in reasons and "unknown, retired or root concept" in reasons
    snap = mem.store.load_snapshot("maya")
    assert any(r.dst == old and r.reason == "changed" for r in snap.relations.values())
    sent = json.loads(chat.calls[0]["messages"][-1].content.rsplit("\n\nJSON:", 1)[0])
    assert sent["new_facts"][0]["candidates"] == ["E1"] and "maya::f::" not in json.dumps(sent)  # aliases only


def test_llm_adjudicator_failure_keeps_new_and_counts_the_call(mem: Memory) -> None:
    Ingestor(mem, OfflineExtractor()).ingest(sess("s1", "I really enjoy hiking in the mountains on weekends."))
    for reply in ("not json", ChatError("read timeout", "timeout")):
        ing = Ingestor(mem, OfflineExtractor(), LLMAdjudicator(ScriptedChat(reply)))  # type: ignore[arg-type]
        sid = f"s-{len(mem.store.load_snapshot('maya').sessions)}"
        rep = ing.ingest(sess(sid, "These days I no longer enjoy hiking in the mountains on weekends, " + sid,
                              at="2025-10-12T09:30:00Z"))
        assert rep.facts_added == 1 and rep.llm_calls == 1 and rep.adjudication_fallback and rep.supersessions == 0


# ---------------------------------------------------------------- concepts: rules for SPLIT / MERGE
def test_rules_split_an_oversized_concept_by_kind(mem: Memory) -> None:
    # the rules' own concept edits: with the living ontology off (on, it drops them; tests/test_living_concepts.py)
    cfg = IngestConfig(rules=RuleAdjudicatorConfig(split_min_facts=6, split_min_child=3),
                       concepts=LivingConceptsConfig(enabled=False))
    ing = Ingestor(mem, OfflineExtractor(), None, cfg)
    texts = [f"I love pottery style number {i}." for i in range(4)] + [f"I went to pottery studio number {i}." for i in range(4)]
    ing.ingest(sess("s1", *texts))
    rep = ing.ingest(sess("s2", "I went to a pottery studio downtown.", at="2025-09-01T10:00:00Z"))
    assert rep.concepts_split == 1
    snap = mem.store.load_snapshot("maya")
    kids = [c for c, p in snap.parent.items() if p.endswith("::c::art-and-creativity")]
    assert {snap.concepts[c].name for c in kids} == {"art and creativity: preference", "art and creativity: event"}
    new = next(f for f in snap.facts.values() if f.session_id == "s2")
    assert snap.fact_concept[new.fact_id].endswith("/event")  # the new fact lands in the specific child


# ---------------------------------------------------------------- concurrency
def test_same_user_serializes_other_users_run_in_parallel(mem: Memory) -> None:
    active: dict[str, int] = {}
    peak: dict[str, int] = {}
    overall = {"now": 0, "peak": 0}
    guard = threading.Lock()
    ing = Ingestor(mem, OfflineExtractor())

    def hook(step: str) -> None:
        if step != "resolve":
            return
        user = threading.current_thread().name.split("/")[0]
        with guard:
            active[user] = active.get(user, 0) + 1
            peak[user] = max(peak.get(user, 0), active[user])
            overall["now"] += 1
            overall["peak"] = max(overall["peak"], overall["now"])
        time.sleep(0.15)
        with guard:
            active[user] -= 1
            overall["now"] -= 1

    ing.hook = hook
    jobs = [(u, i) for u in ("ann", "bob") for i in range(3)]
    errors: list[BaseException] = []

    def run(u: str, i: int) -> None:
        try:
            ing.ingest(sess(f"{u}-{i}", f"I really enjoy sport number {i} with friends.", user=u))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=j, name=f"{j[0]}/{j[1]}") for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert peak == {"ann": 1, "bob": 1} and overall["peak"] == 2
    for u in ("ann", "bob"):
        snap = mem.store.load_snapshot(u)
        assert len(snap.sessions) == 3 and len(snap.facts) == 3 and snap.version == 3


def test_concurrent_writer_triggers_resolve_again(mem: Memory) -> None:
    """Another process commits for the same user between our snapshot and our commit."""
    ing = Ingestor(mem, OfflineExtractor())
    fired = {"n": 0}

    def hook(step: str) -> None:
        if step == "commit" and fired["n"] == 0:
            fired["n"] += 1
            snap: Snapshot = mem.store.load_snapshot("maya")
            f = Fact(fact_id="maya::f::other", user_id="maya", statement="Has a cat named Tom", kind="circumstance")
            _, cs = apply_batch(snap, EditBatch(user_id="maya", edits=[AttachFact(fact=f, concept_id=snap.root_id,
                                                                                  embedding=tuple([0.1] * 256))]))
            mem.store.commit(cs)

    ing.hook = hook
    rep = ing.ingest(sess("s1", "I really enjoy hiking in the mountains."))
    assert rep.commit_attempts == 2 and rep.status == "committed"
    snap = mem.store.load_snapshot("maya")
    assert "maya::f::other" in snap.facts and len(snap.facts) == 2 and snap.version == 2
