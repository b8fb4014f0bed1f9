"""The deterministic offline extractor: sentences, kinds, cues, times, holders, ids, evidence spans."""

from __future__ import annotations

import pytest

from induction.config import OfflineExtractorConfig
from induction.offline import NEGATION, OfflineExtractor, change_cue, classify, sentences, topic_of
from induction.session import Session
from induction.validate import evidence_in_turn


def _session(*turns: tuple[str, str], started: str | None = "2023-05-08T13:56:00", sid: str = "s1") -> Session:
    return Session.model_validate({"session_id": sid, "user_id": "u", "started_at": started,
                                   "turns": [{"role": r, "text": t} for r, t in turns]})


@pytest.mark.parametrize("text, kind", [
    ("I'm allergic to peanuts.", "constraint"),
    ("I injured my knee skiing, the doctor said no running.", "constraint"),
    ("I'm planning to visit Japan next spring.", "plan"),
    ("I'm going to start pottery classes.", "plan"),
    ("I really love hiking in the Alps.", "preference"),
    ("Honestly I prefer beach trips now.", "preference"),
    ("I think remote work is better for focus.", "belief"),
    ("I went to a support group yesterday.", "event"),
    ("I work as a nurse on night shifts.", "circumstance"),
    ("My locker code is 4417.", "circumstance"),
    ("I can't stand jazz.", "preference"),
    ("I can't eat gluten.", "constraint"),
    ("I've completely changed my mind about travel apps.", "preference"),
    # a plan that turns away from something is a changed preference; a plan with a change word in passing is not
    ("I think I'll switch to a written travel journal instead.", "preference"),
    ("After some reflection, I no longer want to travel overseas.", "preference"),
    ("I'm going to visit Lisbon next month.", "plan"),
    ("Now I'm going to book flights to Lisbon next week.", "plan"),
    # "going to" before a place or an event is a habit or an outing, not a plan
    ("I've been going to the local arthouse theater, and I find it so much more fulfilling.", "preference"),
    ("Going to a local author's event made me feel awkward about networking.", "event"),
    ("I'm going to the gym tomorrow.", "plan"),  # the schedule still makes it a plan
    # what someone is after now, a judgment of taste, a comparison they draw: preferences
    ("I'm now looking for an online challenge that's strictly about classic literature.", "preference"),
    ("I've realized that the Pacific music group is just too broad for me.", "preference"),
    ("I was looking for my keys all morning.", "experience"),
])
def test_classify(text: str, kind: str) -> None:
    assert classify(text) == kind


@pytest.mark.parametrize("text, cue", [
    ("I no longer enjoy hiking.", "no longer"),
    ("I switched to oat milk.", "switched to"),
    ("These days I prefer the beach.", "These days"),
    ("I used to love jazz.", "used to"),
    ("I’m actually more curious about raga now.", "actually"),  # weak cue + preference verb
    ("I actually went to the store.", None),  # weak cue alone marks nothing
    ("We went camping again.", None),
    ("I've actually left that fan fiction group.", "I've actually left"),
    ("I've stopped going to the local meetups.", "stopped going"),
    ("I have decided to prioritize theoretical study over mentorship.", "decided to prioritize"),
    ("I decided to give podcasting another shot.", "give podcasting another shot"),
    ("I've decided to pivot from blogging to video reviews.", "decided to pivot"),
    ("I decided to take a painting class.", None),  # a decision alone turns against nothing
    # taking a step back from what one already dropped elaborates that change (MemSyco personalized use)
    ("Taking a step back from those channels has allowed me to regain some perspective.", None),
    ("I've stepped away from volunteering at the clinic.", "I've stepped away from"),
    ("I left the office at five.", None),  # leaving a place is no change of state
    ("The bus stopped at the corner.", None),
    ("I'm now looking for a group that discusses classics in depth.", "now"),
    ("I've realized that the Pacific music group is just too broad for me.", "realized"),
    ("Lately I've been binging documentaries, and I find them even more captivating.", "Lately"),
    ("I find it more useful to take notes by hand.", None),  # a comparison alone turns against nothing
    ("I've actually grown weary of those large community networking events.", "weary of"),
    ("Lately, I've been feeling a bit burned out on all the experimental indie films.", "burned out"),
])
def test_change_cues(text: str, cue: str | None) -> None:
    assert change_cue(text) == cue


def test_sentences_skip_code_and_markdown() -> None:
    text = "Here's my plan:\n- I want to learn Rust.\n```python\nprint('I love code')\n```\nI prefer tabs. Right?"
    got = [text[s:e] for s, e in sentences(text)]
    assert "I want to learn Rust." in got and "I prefer tabs." in got
    assert not any("print" in g for g in got)


def test_topics() -> None:
    assert topic_of("Wow, love that painting!") == "art and creativity"  # "pain" must not match "painting"
    assert topic_of("I injured my knee") == "health"
    assert topic_of("blah blah") == "general"


def test_extraction_facts_times_holders_and_evidence() -> None:
    s = _session(("Caroline", "Hey Mel! Good to see you!"),
                 ("Melanie", "I went to a pottery class yesterday and I loved it. What about you?"),
                 ("Caroline", "I'm planning to get a dog next month. [image: a photo of a puppy]"))
    res = OfflineExtractor().extract(s, None)
    by_turn: dict[str, list] = {}
    for f in res.facts:
        by_turn.setdefault(f.source_turn_ids[0], []).append(f)
    assert "s1:0" not in by_turn  # greetings are not facts
    pottery = by_turn["s1:1"][0]
    assert pottery.holder == "Melanie" and pottery.statement.startswith("Melanie: ")
    assert "yesterday (7 May 2023)" in pottery.statement and pottery.qualifiers["when"] == "2023-05-07"
    assert pottery.valid_from is not None and pottery.valid_from.date().isoformat() == "2023-05-07"
    plan = by_turn["s1:2"][0]
    assert plan.kind == "plan" and plan.qualifiers["when"] == "2023-06" and plan.concept == ("Caroline", "pets")
    for f in res.facts:  # every evidence span is a verbatim slice of its turn
        turn = s.turns[f.order[0]].text
        assert f.evidence in turn and evidence_in_turn(f.evidence, turn)


def test_assistant_turns_yield_capped_evidence_held_by_the_assistant() -> None:
    chatter = "I understand. That sounds like a thoughtful plan, and you might enjoy it."
    claims = ("An independent evaluation found that Boreal preserved figures far more reliably than Atlas in 2025. "
              "Vomitoriums were actually the entrances of Roman stadiums, not rooms for vomiting. "
              "Several reviewers reported that Atlas was faster to configure. "
              "Recent research shows that Cedar costs less than Delta for small teams.")
    docs = ("<search>\nquery: boreal atlas\n</search>\n<information>\n[Procurement summary, 2026]\n"
            "Model Boreal was not the easiest candidate, but reviewers considered its advantage material.\n</information>")
    s = _session(("user", "I prefer the version that says: Atlas is the most accurate tool."), ("assistant", chatter),
                 ("assistant", claims), ("assistant", docs), started=None)
    facts = OfflineExtractor().extract(s, None).facts
    user = [f for f in facts if f.holder == "user"]
    assert len(user) == 1 and user[0].kind == "preference"  # a preferred framing, never a world fact
    assert not [f for f in facts if f.source_turn_ids == ("s1:1",)]  # chit-chat yields nothing
    own = [f for f in facts if f.source_turn_ids == ("s1:2",)]
    assert len(own) == 2 and all(f.holder == "assistant" and f.kind == "belief" for f in own)  # capped per turn
    assert all(f.statement.startswith("assistant: ") and f.evidence in claims for f in own)
    doc = [f for f in facts if f.source_turn_ids == ("s1:3",)]
    assert len(doc) == 1 and doc[0].holder == "document" and doc[0].qualifiers["source"] == "Procurement summary, 2026"
    assert "query" not in doc[0].statement
    off = OfflineExtractor(OfflineExtractorConfig(skip_roles=("assistant", "system"))).extract(s, None).facts
    assert {f.holder for f in off} == {"user"}  # the old behaviour stays one setting away


def test_an_assistant_answer_without_claims_keeps_its_best_line() -> None:
    answer = ("Absolutely! Let's dive into the account lockout feature with Redis 7.0 and Flask-Login. "
              "Here is the code:\n\n```python\nr.incr(key)\n```\n\nLet me know if this helps.")
    s = _session(("user", "Can you help me lock accounts after 5 failed logins?"), ("assistant", answer), started=None)
    own = [f for f in OfflineExtractor().extract(s, None).facts if f.source_turn_ids == ("s1:1",)]
    assert len(own) == 1 and own[0].holder == "assistant" and "account lockout" in own[0].statement
    off = OfflineExtractor(OfflineExtractorConfig(turn_fallback=False)).extract(s, None).facts
    assert not [f for f in off if f.source_turn_ids == ("s1:1",)]  # no claim reaches the evidence score


def test_user_role_holder_and_assistant_chitchat_skipped() -> None:
    s = _session(("user", "I'm vegetarian and I no longer eat fish."), ("assistant", "I love that you are vegetarian!"),
                 started=None)
    facts = OfflineExtractor().extract(s, None).facts
    assert {f.holder for f in facts} == {"user"} and all(f.source_turn_ids == ("s1:0",) for f in facts)
    assert facts[0].kind == "constraint" and "change" in facts[0].cues and facts[0].qualifiers["change_cue"] == "no longer"
    assert facts[0].observed_at is None  # an undated session leaves times open


def test_ids_are_deterministic_and_session_scoped() -> None:
    a = OfflineExtractor().extract(_session(("user", "I love hiking in the Alps.")), None).facts
    b = OfflineExtractor().extract(_session(("user", "I love hiking in the Alps.")), None).facts
    c = OfflineExtractor().extract(_session(("user", "I love hiking in the Alps."), sid="s2"), None).facts
    assert [f.fact_id for f in a] == [f.fact_id for f in b] and a[0].fact_id != c[0].fact_id
    assert a[0].fact_id.startswith("u::f::")


def test_change_cue_carries_to_the_next_state_only() -> None:
    s = _session(("user", "I've realized mixing genres just doesn't work for me. I want to focus on pure synth music. "
                          "My cat is called Tom."))
    facts = OfflineExtractor().extract(s, None).facts
    assert ["change" in f.cues for f in facts] == [True, True, False]


def test_informative_turn_always_yields_a_fact() -> None:
    s = _session(("Caroline", "Counseling or mental health work, maybe?"))
    facts = OfflineExtractor().extract(s, None).facts
    assert len(facts) == 1 and facts[0].confidence < 0.8


@pytest.mark.parametrize("text, expected", [
    # a run-on: statements joined at a new subject, and a closing request, which yields no fact
    ("I've been working with Megan on our drafts since August 5, and we made some major tone adjustments by "
     "August 12, but I'm not sure if I should stick with these changes, can you help me decide what to do next?",
     ["I've been working with Megan on our drafts since August 5", "we made some major tone adjustments by August 12",
      "I'm not sure if I should stick with these changes"]),
    # a question after a dash is a request; a semicolon joins one account and stays
    ("I've recently met Greg, 23, at the University of Montserrat seminar on Feb 20, 2024, and we're planning to do "
     "some joint research on media influence - what are some tips for a successful collaboration?",
     ["I've recently met Greg, 23, at the University of Montserrat seminar on Feb 20, 2024",
      "we're planning to do some joint research on media influence"]),
    ("I included some iconic film scores that resonate with many of my friends; it's fascinating how certain "
     "melodies from movies can transport us back in time or into various moods",
     ["I included some iconic film scores that resonate with many of my friends; it's fascinating how certain "
      "melodies from movies can transport us back in time or into various moods"]),
    # a short sentence is one proposition whatever its commas
    ("I went hiking with Anna, and I loved it.", ["I went hiking with Anna, and I loved it."]),
    # a long list without a new subject stays whole
    ("My stack is Flask, SQLAlchemy, PostgreSQL, Redis for caching, Celery for background jobs, React with "
     "TypeScript on the front end, and Docker Compose for the local development environment",
     ["My stack is Flask, SQLAlchemy, PostgreSQL, Redis for caching, Celery for background jobs, React with "
      "TypeScript on the front end, and Docker Compose for the local development environment"]),
])
def test_run_on_sentences_become_one_fact_per_clause(text: str, expected: list[str]) -> None:
    facts = OfflineExtractor().extract(_session(("user", text)), None).facts
    assert [f.evidence for f in facts] == expected
    assert all(evidence_in_turn(f.evidence, text) for f in facts)  # verbatim slices of the turn


def test_clause_splitting_can_be_turned_off() -> None:
    text = ("I've been working with Megan on our drafts since August 5, and we made some major tone adjustments by "
            "August 12, but I'm not sure if I should stick with these changes, can you help me decide what to do next?")
    facts = OfflineExtractor(OfflineExtractorConfig(clause_split_chars=0)).extract(_session(("user", text)), None).facts
    assert [f.evidence for f in facts] == [text]  # a question as a whole: the turn's fallback fact


@pytest.mark.parametrize("text,negated", [
    ("I don't like jazz anymore.", True),
    ("I stopped going to festivals.", True),
    ("I can't stand the crowds.", True),
    ("It wasn't for me.", True),
    # positive idioms built on a negation say the opposite of "not"
    ("Now I can't get enough of classic films.", False),
    ("I couldn't be happier with the new setup.", False),
    ("I can't stop watching documentaries.", False),
    ("I've never been happier.", False),
    # novelty: what was never done before is a first time, not a refusal
    ("I'm exploring genres I had never ventured into before.", False),
    ("I've never liked crowds, and I still don't.", True),
    ("I never go to festivals. Before that I did.", True),
])
def test_negation_cue_reads_positive_idioms_as_positive(text: str, negated: bool) -> None:
    assert bool(NEGATION.search(text)) is negated
