"""Requests that draw on the assistant or span the conversation (retrieval/seeds/breadth.py): the pattern
tables, the holder factor, and brief lines through a real embedded store."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.edits import CreateConcept, EditBatch
from graph.embedded.store import EmbeddedStore
from graph.models import Fact
from retrieval.retrieve import RetrievalConfig
from retrieval.seeds.breadth import SEVERAL_CLASSES, asks_broadly, asks_for_several, draws_on_assistant
from tests.test_contract import EMB, attach, commit


@pytest.mark.parametrize("query, expected", [
    # BEAM summarization and development questions: the arc, half of it in the assistant's replies
    ("Can you give me a comprehensive summary of how I handled the security and database challenges in my "
     "budget tracker app across our discussions?", True),
    ("Can you summarize how my writing has progressed and the strategies I've used to improve it over time?", True),
    ("How have my anniversary celebrations evolved in terms of location?", True),
    ("Give me a timeline of the deployment work.", True),
    ("Can you recap the plan so far?", True),
    ("List all the libraries we picked for the weather app.", True),
    # what the user raised is the user's evidence: the factor stays
    ("Can you walk me through the order in which I brought up different aspects of my writing journey "
     "throughout our conversations?", False),
    ("Can you list all the concerns I mentioned about the budget?", False),
    # narrow questions
    ("When does my first sprint end?", False),
    ("What did Caroline do in May 2023?", False),
    ("Which option best aligns with the user's preferences for a weekend film?", False),
    ("How did you recommend managing the flow of requests when my app risks overwhelming the service?", False),
    ("Is the summer cabin still booked?", False),  # 'summer' is not 'summary'
])
def test_asks_broadly(query: str, expected: bool) -> None:
    assert asks_broadly(query) is expected


@pytest.mark.parametrize("query, expected", [
    ("What approach did you recommend to balance speeding up the hiring process with fairness?", True),
    ("How did you recommend managing the flow of requests when my app risks overwhelming the service?", True),
    ("You suggested a caching layer last week; which library was it?", True),
    ("Can you summarize how my budgeting app developed over time?", True),  # broad
    ("Could you suggest a weekend film for me?", False),  # asks for something new
    ("Can you recommend a lively playlist for our gathering?", False),
    ("Can you list all the concerns I mentioned about the budget?", False),
    ("When does my first sprint end?", False),
])
def test_draws_on_assistant(query: str, expected: bool) -> None:
    assert draws_on_assistant(query) is expected


@pytest.mark.parametrize("query, expected", [
    # written for this test, outside every benchmark: each class of a request for several things
    ("Could you list a few plants I repotted?", True),  # an enumeration ("list the / all" is an arc, BROAD)
    ("Name some places Oskar has lived.", True),
    ("What are some dishes my aunt cooks on holidays?", True),
    ("What else did Priya bring to the picnic?", True),
    ("Which board games has Tomas taught his nephews?", True),  # a plural wh-object with its auxiliary
    ("What new recipes did Anneke try?", True),
    ("What kinds of fabric does the tailor stock?", True),
    ("Which open-source libraries has Dana maintained?", True),  # a modifier with a hyphen, a sign or a dot
    ("What C++ books did Ravi buy?", True),
    ("Which low-cost airline did Ravi fly to Porto?", False),
    ("What were the reasons for the delay?", True),  # plural agreement
    ("What do Lena and her brother both collect?", True),  # several holders
    ("How many instruments does Bram play?", True),  # a count of things
    ("How many times did the boiler break?", True),
    # one thing, or an arc
    ("Which board game did Tomas teach his nephew first?", False),
    ("What is Oskar's favourite city?", False),
    ("What does Priya do for a living?", False),  # 'does' is no plural noun
    ("What was the reason for the delay?", False),
    ("When did James move to Lisbon?", False),  # a name ending in -s is no plural head
    ("What class does Lotus take on Tuesdays?", False),
    ("How many days passed between the audition and the premiere?", False),  # a duration, not a set
    ("How many weeks are left before the exam?", False),
    ("Summarize the recipes we talked about over time.", False),  # an arc: the gist route's
])
def test_asks_for_several(query: str, expected: bool) -> None:
    assert asks_for_several(query) is expected
    assert len(SEVERAL_CLASSES) == 5


def test_for_request_overrides_the_holder_factor_only_for_broad_requests() -> None:
    cfg = RetrievalConfig(holder_weights={"assistant": 0.5, "doc": 0.8}, routes_off_for={})  # no route gate: the same object
    assert cfg.for_request("When does my sprint end?") is cfg
    assert cfg.for_request("Which tool did you recommend for the sprint?").holder_weights["assistant"] == 1.0
    broad = cfg.for_request("Summarize how the sprint went over time")
    assert broad.holder_weights == {"assistant": 1.0, "doc": 0.8} and cfg.holder_weights["assistant"] == 0.5
    off = RetrievalConfig(broad_holder_weights={}, routes_off_for={})
    assert off.for_request("Summarize how the sprint went over time") is off


def test_a_request_that_spans_the_conversation_gets_brief_lines(tmp_path: Path) -> None:
    from retrieval.render import render_context
    from memcore.memory import Memory

    long = ("I finally moved the budget tracker from SQLite to PostgreSQL 15 on Render last weekend after the "
            "nightly backups kept failing and the reports got slow")
    assistant = ("assistant: A connection pool such as PgBouncer keeps the PostgreSQL server from running out of "
                 "connections when the app scales up under load")
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    commit(store, EditBatch(user_id="ada", edits=[CreateConcept(concept_id="ada:c", name="c"),
        attach(Fact(fact_id="ada:long", user_id="ada", statement=long), "ada:c"),
        attach(Fact(fact_id="ada:a", user_id="ada", statement=assistant, holder="assistant"), "ada:c"),
        attach(Fact(fact_id="ada:short", user_id="ada", statement="Uses PostgreSQL 15"), "ada:c")]))
    mem = Memory(store, EMB)
    try:
        broad = {it.fact.fact_id: it for it in mem.retrieve("ada", "Summarize how my database setup developed over time").items}
        b = broad["ada:long"].brief
        words = RetrievalConfig().broad_line_words
        assert b is not None and len(b.replace("…", "").split()) == words == 6 and b.strip("… ") in long  # a verbatim window
        assert broad["ada:a"].brief is not None and broad["ada:a"].brief.startswith("assistant: ")  # whose words stay marked
        assert broad["ada:short"].brief is None  # already short
        text = render_context(mem.retrieve("ada", "Summarize how my database setup developed over time"), 600).text
        assert b in text and long not in text
        narrow = mem.retrieve("ada", "Which database does my budget tracker use?")
        assert all(it.brief is None for it in narrow.items) and long in render_context(narrow, 600).text
        mem.retrieval = mem.retrieval.model_copy(update={"broad_line_words": 0})
        assert all(it.brief is None for it in mem.retrieve("ada", "Summarize my database setup so far").items)
    finally:
        mem.close()


def test_several_line_words_shortens_only_a_request_for_several_things(tmp_path: Path) -> None:
    from memcore.memory import Memory

    long = ("I finally planted the heirloom tomatoes, the purple basil and two rows of runner beans along the "
            "south fence after the last frost had passed")
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    commit(store, EditBatch(user_id="ada", edits=[CreateConcept(concept_id="ada:c", name="c"),
        attach(Fact(fact_id="ada:long", user_id="ada", statement=long), "ada:c"),
        attach(Fact(fact_id="ada:short", user_id="ada", statement="Grows mint on the balcony"), "ada:c")]))
    mem = Memory(store, EMB)
    try:
        several = "Which vegetables has Ada planted in the garden?"
        assert all(it.brief is None for it in mem.retrieve("ada", several).items)  # off by default
        mem.retrieval = mem.retrieval.model_copy(update={"several_line_words": 8})
        items = {it.fact.fact_id: it for it in mem.retrieve("ada", several).items}
        b = items["ada:long"].brief
        assert b is not None and len(b.replace("…", "").split()) == 8 and b.strip("… ") in long
        assert items["ada:short"].brief is None  # short already
        assert all(it.brief is None for it in mem.retrieve("ada", "Which vegetable did Ada plant first?").items)
    finally:
        mem.close()
