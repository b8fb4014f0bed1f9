"""Tense and aspect (induction/reading/aspect.py): a statement with a verb of doing that says what holds now is
a state, not an event, to the offline extractor. Every sentence here is written for this test, from no benchmark."""

from __future__ import annotations

import pytest

from graph.rules import can_supersede, may_conflict
from induction.offline import classify_with_source, extract_offline
from induction.reading.aspect import CHANGE_ADVERB, RECURRENCE, RESULT, aspect, holds_now
from induction.reading.claims import CLAIM, relays_claim
from induction.session import Session, SessionTurn as Turn

# (cue set, class, a sentence of that class) — each class reads its own sentence on its own
CLASS_CASES = [
    (CHANGE_ADVERB, "now", "So I'm a night owl now."),
    (CHANGE_ADVERB, "no more", "I don't take sugar in my tea anymore."),
    (CHANGE_ADVERB, "still", "Left the band in May, still teaching guitar though."),
    (RESULT, "replacing an arrangement", "Moved my savings to a credit union."),
    (RESULT, "becoming", "I've become a morning person."),
    (RECURRENCE, "frequency adverb", "I usually bake bread on my own."),
    (RECURRENCE, "every", "I read poetry every evening."),
    (RECURRENCE, "recurring time", "In the evenings I read poetry."),
    (CLAIM, "reported by the speaker", "I read that sloths sleep twenty hours a day."),
    (CLAIM, "a source says", "My atlas says Bern is the biggest Swiss city."),
    (CLAIM, "predicted of a thing", "Skipping breakfast is going to slow my metabolism."),
]


@pytest.mark.parametrize("cue, name, sentence", CLASS_CASES)
def test_every_class_reads_its_own_sentence(cue: object, name: str, sentence: str) -> None:
    assert cue.of(name).search(sentence), (name, sentence)  # type: ignore[attr-defined]


def test_no_class_is_left_without_a_sentence() -> None:
    tested = {(c.name, n) for c, n, _ in CLASS_CASES}  # type: ignore[attr-defined]
    assert tested == {(c.name, n) for c in (CHANGE_ADVERB, RESULT, RECURRENCE, CLAIM) for n in c.names()}


@pytest.mark.parametrize("sentence, ok", [
    ("I read that sloths sleep twenty hours a day.", True),
    ("In my family we say you catch a chill from a draught.", True),
    ("The guy at my gym claims protein shakes ruin your kidneys.", True),
    ("It's going to rain all weekend.", True),
    # not a relayed claim: reading a thing, a plan of the speaker, someone's news
    ("I read a book about sloths.", False),
    ("I'm going to repaint the kitchen.", False),
    ("My sister said she got the job.", False),
    # a source's directive to the speaker is an instruction, not a claim about the world
    ("My coach said no sprinting until March.", False),
    ("The physio says to ice it twice a day.", False),
    ("My doctor said I shouldn't lift anything heavy.", False),
])
def test_relays_claim(sentence: str, ok: bool) -> None:
    assert relays_claim(sentence) == ok


def test_a_directive_from_a_source_leaves_the_speakers_constraint() -> None:
    """The source-says class once took "the doctor said no running" for a claim, so an injury read as a belief."""
    assert classify_with_source("I injured my shoulder climbing, and my doctor said no bouldering.") == ("constraint", True)


@pytest.mark.parametrize("sentence, expected", [
    # a present state at the end of a report of a change
    ("Got promoted, I'm head of operations now.", "result"),
    ("I started eating fish again, so I'm a pescatarian now.", "result"),
    ("Sold the flat last spring, we rent these days.", "result"),
    ("I cycle to work these days.", "result"),
    ("I don't take sugar in my tea anymore.", "result"),
    ("Left the band in May, still teaching guitar though.", "result"),
    ("Oat flat white now.", "result"),
    # replacing an arrangement, becoming
    ("Moved my savings to a credit union.", "result"),
    ("I've switched my phone plan over to prepaid.", "result"),
    ("changed the door code to 4471 after the break-in", "result"),
    ("I've become a morning person.", "result"),
    ("went freelance in March, best decision ever", "result"),
    # habits: a bare present with a recurrence marker or a scope
    ("In the evenings I read poetry.", "habitual"),
    ("On rainy days I read in bed.", "habitual"),
    # claims about the world
    ("Pearls are made by oysters.", "generic"),
    ("A man-made lake can hold fish.", "generic"),
    # a general rule said first, before what the speaker does about it
    ("You have to soak chickpeas overnight, so I started them at lunch.", "generic"),
    ("stretching cold causes injuries so i warm up first", "generic"),
    # what happened
    ("We made pancakes on Sunday.", "past"),
    ("Last weekend I went to the coast.", "past"),
    ("We went to the beach and swam.", "past"),
    ("When I was a kid I read comics every night.", "past"),
    ("I read the whole novel last night.", None),
])
def test_aspect(sentence: str, expected: str | None) -> None:
    assert aspect(sentence) == expected


@pytest.mark.parametrize("sentence, kind, certain", [
    ("Got promoted, I'm head of operations now.", "circumstance", False),
    ("Moved my savings to a credit union.", "circumstance", False),
    ("On rainy days I read in bed.", "circumstance", False),
    ("Pearls are made by oysters.", "belief", False),
    ("I read that sloths sleep twenty hours a day.", "belief", True),
    ("Skipping breakfast is going to slow my metabolism.", "belief", True),
    ("You have to soak chickpeas overnight, so I started them at lunch.", "belief", False),
    ("We made pancakes on Sunday.", "event", True),
    ("Last weekend I went to the coast.", "event", True),
])
def test_the_extractor_reads_a_state_behind_a_verb_of_doing(sentence: str, kind: str, certain: bool) -> None:
    assert classify_with_source(sentence) == (kind, certain)
    if not relays_claim(sentence):
        assert holds_now(sentence) == (kind != "event")


def _session(*texts: str) -> Session:
    return Session(session_id="s1", user_id="u", started_at="2026-03-01T10:00:00",
                   turns=[Turn(role="user", text=t) for t in texts])


def test_a_reported_change_may_replace_the_state_it_changes() -> None:
    old, new = extract_offline(_session("I'm a vegetarian.", "I started eating fish again, so I'm a pescatarian now."))
    assert new.kind != "event" and can_supersede(new.kind, old.kind)


def test_a_claim_with_a_participle_may_be_disputed_by_evidence() -> None:
    (claim,) = extract_offline(_session("Pearls are made by oysters out of grains of sand."))
    assert may_conflict(claim.kind, "belief", "user", "assistant")
