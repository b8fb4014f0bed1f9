"""The context route: requests that refer back are resolved against the user's latest turn (pattern
tables, then a real store of either backend through Memory.retrieve)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from graph.edits import CreateConcept, EditBatch
from graph.models import Turn
from retrieval.seeds.context import disposition, refers_back
from retrieval.seeds.rank import ROUTES
from memcore.memory import Memory
from tests.test_contract import EMB, T0, attach, commit, fact


@pytest.mark.parametrize("query, expected", [
    ("For the situation we discussed, what would a sensible plan look like?", True),
    ("For the situation we discussed, how would you approach the decision?", True),
    ("Given what I told you, what should I do?", True),
    ("As I mentioned, the venue is fixed. Any advice?", True),
    ("What would you suggest for the plan I described?", True),
    ("How should I handle this situation?", True),
    ("Can you help with what we talked about earlier?", True),
    ("In my current situation, which option fits?", True),
    ("What did Caroline do in May 2023?", False),
    ("When did Melanie paint a sunrise?", False),
    ("Which option best aligns with the user's preferences for a weekend film?", False),
    ("I'm starting to study music theory and want to understand chord progressions.", False),
    ("What is the situation with the project deadline at work?", False),  # names its topic
    ("In that case study, what was the finding?", False),
    ("Which libraries are used in this project?", False),  # the conversation's subject, not its latest turn
    ("Have I integrated Flask-Login for session management in my project?", False),
    ("Can you give me a summary of everything we've covered about triangles?", False),  # names its topic
    ("What is your recommendation for this situation?", True),
])
def test_refers_back(query: str, expected: bool) -> None:
    assert refers_back(query) is expected


@pytest.mark.parametrize("statement, expected", [
    ("I prefer starting early.", True),
    ("I strongly prefer asynchronous communication at work.", True),
    ("I usually define a small set of criteria.", True),
    ("I'd rather hear the strongest concern first.", True),
    ("Group sessions are useful, but I dislike entering them without preparation.", True),
    ("I would like one concrete starting point.", False),
    ("I want a short process for comparing options.", False),
    ("I am planning a weekend hike with friends.", False),
])
def test_disposition(statement: str, expected: bool) -> None:
    assert disposition(statement) is expected


def _conversation(store: Any, u: str, dated: bool) -> None:
    """Chatter about note-taking, one profile turn, an assistant reply, the current situation last."""
    said = [("user", ["I want a lightweight method for my decision notes.", "My notes pile up in several documents.",
                      "A short template might help me revisit old choices.", "Old documents look almost identical."]),
            ("user", ["I prefer starting early.", "I usually put demanding work first in the morning."]),
            ("assistant", ["Morning routines suit many people who like quiet hours."]),
            ("user", ["Status labels for my notes could keep decided items apart.", "A single page should be enough."]),
            ("user", ["I am planning a team offsite where colleagues travel that morning."])]
    turns = [Turn(turn_id=f"{u}-t{i}", user_id=u, session_id="s1", seq=i, role=role, text=" ".join(ss),
                  at=T0 + timedelta(minutes=i) if dated else None) for i, (role, ss) in enumerate(said)]
    edits: list[Any] = [CreateConcept(concept_id=f"{u}:c", name="notes")]
    for i, (role, ss) in enumerate(said):
        for j, s in enumerate(ss):
            f = fact(u, f"t{i}s{j}", s, "belief" if role == "assistant" else "preference", holder=role,
                     source_turn_ids=(f"{u}-t{i}",))
            edits.append(attach(f.model_copy(update={"observed_at": T0 + timedelta(minutes=i) if dated else None}), f"{u}:c"))
    commit(store, EditBatch(user_id=u, session_id="s1", session_hash="h", turns=turns, edits=edits))


@pytest.mark.parametrize("dated", [True, False])
def test_a_request_that_refers_back_gets_the_situation_and_the_profile(store: Any, dated: bool) -> None:
    u = "ana"
    _conversation(store, u, dated)
    mem = Memory(store, EMB)
    b = mem.retrieve(u, "For the situation we discussed, what would a sensible plan look like?", k=3)
    seeds = {s.fact_id: s.routes for s in b.explain.seeds if not s.window}  # the K matched, not their window
    assert set(seeds) == {f"{u}:t4s0", f"{u}:t1s0", f"{u}:t1s1"}  # the situation, then the stated dispositions
    assert seeds[f"{u}:t4s0"]["context"] == 1 and seeds[f"{u}:t1s0"]["context"] == 2
    # Without the context route the same request finds neither the profile nor (reliably) the situation.
    off = mem.retrieve(u, "For the situation we discussed, what would a sensible plan look like?", k=3,
                       routes=tuple(r for r in ROUTES if r != "context"))
    assert not {f"{u}:t1s0", f"{u}:t1s1"} <= {s.fact_id for s in off.explain.seeds if not s.window}


def test_a_request_that_names_its_topic_is_left_alone(store: Any) -> None:
    u = "ben"
    _conversation(store, u, dated=True)
    mem = Memory(store, EMB)
    q = "status labels for decision notes"
    on = mem.retrieve(u, q, k=5)
    off = mem.retrieve(u, q, k=5, routes=tuple(r for r in ROUTES if r != "context"))
    assert [(s.fact_id, s.score) for s in on.explain.seeds] == [(s.fact_id, s.score) for s in off.explain.seeds]
    assert not any("context" in s.routes for s in on.explain.seeds)


def test_the_referent_is_the_latest_visible_user_turn(store: Any) -> None:
    u = "cy"
    _conversation(store, u, dated=True)
    mem = Memory(store, EMB)
    hidden = frozenset(f for f in store.load_snapshot(u).facts if not f.startswith(f"{u}:t4"))
    b = mem.retrieve(u, "Given what I told you, what should I do?", k=3, allowed_ids=hidden)
    first = [s.fact_id for s in b.explain.seeds if s.routes.get("context") == 1]
    assert first and all(f.startswith(f"{u}:t3") for f in first)  # t4 is outside the view; t2 is the assistant's
