"""Table-driven tests of the pure relational-state rules."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from graph.models import Fact, Relation
from graph.rules import (change_evidenced, can_conflict, can_supersede, continues, corrects, derive_state,
                         derive_validity, has_cycle, holds_state, may_replace, reverses,
                         may_conflict, may_supersede, may_supersede_sibling, edge_kinds_allowed, instructs)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
PAST = NOW - timedelta(days=1)
FUTURE = NOW + timedelta(days=1)


def fact(fid: str = "a", **kw: object) -> Fact:
    return Fact(fact_id=fid, user_id="u", statement=f"statement {fid}", **kw)  # type: ignore[arg-type]


RETRACTED = fact("x", retracted_at=PAST)
LIVE = fact("y")

VALIDITY_CASES = [
    # (name, fact kwargs, superseded-by, conflicts-with, expected)
    ("plain", {}, [], [], "current"),
    ("superseded", {}, [LIVE], [], "superseded"),
    ("superseded by a retracted fact revives", {}, [RETRACTED], [], "current"),
    ("disputed", {}, [], [LIVE], "disputed"),
    ("dispute with a retracted fact ends", {}, [], [RETRACTED], "current"),
    ("superseded wins over disputed", {}, [LIVE], [LIVE], "superseded"),
    ("expired by valid_to", {"valid_to": PAST}, [], [], "expired"),
    ("valid_to in the future", {"valid_to": FUTURE}, [], [], "current"),
    ("expired by expired_at", {"expired_at": PAST}, [LIVE], [], "expired"),
    ("expiry scheduled later", {"expired_at": FUTURE}, [], [], "current"),
    ("retracted wins over all", {"retracted_at": PAST, "valid_to": PAST}, [LIVE], [LIVE], "retracted"),
    ("naive datetimes are UTC", {"valid_to": datetime(2025, 12, 31)}, [], [], "expired"),
]


@pytest.mark.parametrize("name,kw,sup,conf,expected", VALIDITY_CASES, ids=[c[0] for c in VALIDITY_CASES])
def test_derive_validity(name: str, kw: dict, sup: list, conf: list, expected: str) -> None:
    assert derive_validity(fact(**kw), sup, conf, NOW) == expected


SUPERSEDE_CASES = [
    ("preference", "preference", True),
    ("constraint", "preference", True),
    ("preference", "constraint", True),
    ("event", "preference", False),
    ("plan", "plan", True),
    ("event", "plan", True),
    ("belief", "event", False),
    ("belief", "experience", True),  # a changed view outgrows what an experience implied, as a preference does
    ("circumstance", "circumstance", True),
    ("preference", "experience", True),  # an experience outgrown: what it implied is replaced
    ("preference", "event", True),
    ("preference", "plan", True),  # a plan given up ("no more trip planning for me")
    ("preference", "circumstance", False),
    ("experience", "preference", True),
    ("event", "experience", False),  # one happening does not replace another
]


DIRECTION_CASES = [
    # (new kind, old kind, new holder, old holder, new is later, allowed)
    ("preference", "preference", "user", "user", True, True),
    ("preference", "preference", "user", "user", False, False),  # an old preference restated later: no flip
    ("preference", "experience", "user", "user", True, True),
    ("belief", "preference", "document", "user", True, False),  # evidence disputes, never replaces
    ("preference", "preference", "Ann", "Bob", True, False),  # another person's preference
    ("event", "preference", "user", "user", True, False),
]


@pytest.mark.parametrize("old_kind,cue,shift,polar,ok", [
    ("preference", True, False, False, True), ("preference", False, True, False, True),
    ("preference", False, False, True, True), ("preference", False, False, False, False),  # same topic, no change said
    ("experience", True, False, False, True), ("experience", False, True, True, False), ("event", False, True, False, False)])
def test_change_must_be_evidenced(old_kind: str, cue: bool, shift: bool, polar: bool, ok: bool) -> None:
    assert change_evidenced(old_kind, cue, shift, polar) is ok


@pytest.mark.parametrize("cue,shift,polar,ok", [(True, False, False, True), (False, True, False, False),
                                               (False, False, True, False), (False, True, True, False)])
def test_a_reported_change_is_replaced_only_on_an_explicit_cue(cue: bool, shift: bool, polar: bool, ok: bool) -> None:
    assert change_evidenced("preference", cue, shift, polar, old_reports_change=True) is ok


def test_a_restated_old_preference_does_not_flip_the_newer_one() -> None:
    # "I used to love jazz" after "I no longer enjoy jazz; I prefer techno": agrees with it, never replaces it
    assert not may_supersede("preference", "preference", "user", "user", True, new_is_retrospective=True,
                             old_reports_change=True)
    # ...but a retrospective statement may still close an old present-tense claim ("I love jazz")
    assert may_supersede("preference", "preference", "user", "user", True, new_is_retrospective=True)


@pytest.mark.parametrize("nk,ok_,nh,oh,later,ok", DIRECTION_CASES)
def test_may_supersede_direction(nk: str, ok_: str, nh: str, oh: str, later: bool, ok: bool) -> None:
    assert may_supersede(nk, ok_, nh, oh, later) is ok


@pytest.mark.parametrize("a,b,ha,hb,ok", [
    ("preference", "belief", "user", "document", True), ("belief", "preference", "assistant", "user", True),
    ("preference", "preference", "user", "user", True), ("preference", "preference", "Ann", "Bob", False),
    ("belief", "belief", "assistant", "document", False), ("event", "plan", "user", "user", False),
    # evidence is weighed against a person, never against other evidence (the assistant does not dispute itself)
    ("belief", "belief", "assistant", "assistant", False), ("belief", "belief", "document", "document", False),
    # evidence disputes a preference or a belief, not what a person does, plans or lives with
    ("circumstance", "belief", "user", "assistant", False), ("belief", "plan", "document", "user", False),
    ("constraint", "belief", "user", "document", False), ("event", "belief", "Ann", "assistant", False),
    ("belief", "belief", "Ann", "document", True),
    # one person's own statements may conflict whatever their kinds (within can_conflict)
    ("circumstance", "circumstance", "user", "user", True), ("plan", "event", "Ann", "Ann", False)])
def test_may_conflict_holders(a: str, b: str, ha: str, hb: str, ok: bool) -> None:
    assert may_conflict(a, b, ha, hb) is ok


@pytest.mark.parametrize("statement,ok", [
    ("assistant: Data in Transit: Use TLS/SSL encryption for all data transmitted over networks.", True),
    ("assistant: Check if the response is not ok and extract the error message.", True),
    ("assistant: Pilot Participation: Include Jessica in the pilot program.", True),
    ("Always keep a backup of the config.", True),
    ("assistant: Don't store passwords in plain text.", True),
    ("assistant: Research shows remote teams are less productive.", False),  # a noun before a finite verb
    ("Test coverage is 78% now.", False),
    ("Model Boreal was not the easiest candidate to introduce.", False),
    ("assistant: The error typically indicates a None value.", False),
    ("Independent testing found Atlas dropped numerical claims.", False)])
def test_instructs(statement: str, ok: bool) -> None:
    assert instructs(statement) is ok


CORRECTS_CASES = [
    ("assistant: Actually, the Great Wall is not visible from space with the naked eye.", True),
    ("assistant: That's a common misconception: bulls do not react to the colour red.", True),
    ("assistant: Studies show that cracking knuckles does not cause arthritis.", True),
    ("assistant: This is not the case in Flask 2.x.", True),
    ("assistant: According to the 2024 NIST guidance, SMS codes are a weak second factor.", True),
    ("assistant: According to your July 15 progress report, there has been a 10% improvement.", False),
    ("assistant: Scenario: You and Stephen are considering moving to a new city.", False),
    ("assistant: Error Handling: Specific error handling for HTTP 401 Unauthorized.", False),
    ("assistant: It is true that the library is popular.", False),
]


@pytest.mark.parametrize("statement,ok", CORRECTS_CASES)
def test_corrects(statement: str, ok: bool) -> None:
    assert corrects(statement) is ok


@pytest.mark.parametrize("new,old,ok", SUPERSEDE_CASES)
def test_can_supersede(new: str, old: str, ok: bool) -> None:
    assert can_supersede(new, old) is ok


@pytest.mark.parametrize("a,b,ok", [("belief", "belief", True), ("event", "plan", False), ("plan", "event", False),
                                    ("experience", "constraint", True)])
def test_can_conflict(a: str, b: str, ok: bool) -> None:
    assert can_conflict(a, b) is ok


CYCLE_CASES = [
    ([], False),
    ([("a", "b")], False),
    ([("a", "b"), ("b", "c"), ("a", "c")], False),
    ([("a", "a")], True),
    ([("a", "b"), ("b", "a")], True),
    ([("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")], True),
]


@pytest.mark.parametrize("edges,cyclic", CYCLE_CASES)
def test_has_cycle(edges: list, cyclic: bool) -> None:
    cyc = has_cycle(edges)
    assert (cyc is not None) is cyclic
    if cyc:  # the returned nodes really form a cycle
        pairs = set(edges)
        assert all((cyc[i], cyc[(i + 1) % len(cyc)]) in pairs for i in range(len(cyc)))


def test_long_chain_has_no_recursion_limit() -> None:
    edges = [(f"n{i}", f"n{i + 1}") for i in range(20000)]
    assert has_cycle(edges) is None
    assert has_cycle(edges + [("n20000", "n0")]) is not None


def test_derive_state_relations_and_directions() -> None:
    a, b, c = fact("a"), fact("b"), fact("c")
    rels = [Relation(type="SUPERSEDES", src="b", dst="a"), Relation(type="CONFLICTS_WITH", src="c", dst="b"),
            Relation(type="CONFLICTS_WITH", src="c", dst="a", resolved_at=PAST)]
    by_id = {"a": a, "b": b, "c": c}
    sa = derive_state(a, rels, by_id, ("root", "x"), NOW)
    sb = derive_state(b, rels, by_id, (), NOW)
    sc = derive_state(c, rels, by_id, (), NOW)
    assert sa.validity == "superseded" and sa.superseded_by == ("b",) and sa.conflicts_with == ()
    assert sb.validity == "disputed" and sb.supersedes == ("a",) and sb.conflicts_with == ("c",)
    assert sc.validity == "disputed" and sc.conflicts_with == ("b",)
    assert {(v.type, v.direction, v.other_fact_id, v.resolved) for v in sa.relations} == {
        ("SUPERSEDES", "in", "b", False), ("CONFLICTS_WITH", "in", "c", True)}
    assert sa.concept_path == ("root", "x")


# (statement, holds state): questions and responses to someone else never supersede or get superseded.
HOLDS_STATE_CASES = [
    ("I switched to oat milk.", True),
    ("From now on, I'd rather watch horror films alone.", True),
    ("You know, reflecting on that event, I've decided I don't enjoy crowds.", True),
    ("I'm now looking for an online challenge about classic literature.", True),
    ("Wow, I finally finished my novel.", True),
    ("Joanna: I'm tempted to try dairy-free flavors now!", True),
    ("That was a great trip.", True),
    ("Audrey: How often are you able to go hiking now?", False),
    ("Got any favorite flavors for dairy-free desserts?", False),
    ("Have you always wanted a dog", False),
    ("Keep going and never give up!", False),
    ("Tim: Keep it up - you're gonna make a difference!", False),
    ("Don't be afraid to write and share, even if it's just with friends.", False),
    ("Glad you tried something new and it went well.", False),
    ("Nice, spotting pretty birds while hiking must be great.", False),
    ("Taking them on hikes must be awesome!", False),
    ("Definitely, keep me posted and let me know if you need any help.", False),
    ("I'm sure it was a memorable experience.", False),
    ("That sounds amazing!", False),
    ("Gina: Oof, that's tough, Jon.", False),
    ("Joanna: Hey Nate, long time no see!", False),
    ("Joanna: Yeah Nate, your cooking is amazing!", False),
    ("John: That'd be great, Maria!", False),
    ("Highlights of my trip were great.", True),
    # an announcement of news still to come says nothing yet
    ("I've been thinking about my plans again, and I have some updates I'd love to share!", False),
    ("I've got some exciting news to tell you.", False),
    ("Let me fill you in.", False),
    ("I have an update: I switched to tea.", True),
    ("I love sharing updates with my friends.", True),
    # a request for help or information asks; it states nothing to replace or dispute
    ("I'm not sure how to properly configure these variables in my Render.com deployment.", False),
    ("I'd appreciate any help you can provide in getting my weather app deployed.", False),
    ("I switched to Scrivener on May 5, and I'm wondering if this will help my drafts.", False),
    ("Can you help me plan the trip", False),
    ("I'm not a fan of crowds anymore.", True),
    ("I'm sure I prefer tea now.", True),
    # a shared photo shows something; it holds no state of its own
    ("Gina: shared an image: a photo of a clothing store with a variety of clothes on display", False),
    ("shared an image: a photography of a group of children making clay sculptures", False),
    ("[image: a dog on a beach]", False),
    ("I shared an image of my new store on my blog and love it.", True),
    ("I love taking photos of birds.", True),
    # a request to the other person
    ("Audrey: Take some pics and show me what you enjoy.", False),
    ("Send me the recipe when you can!", False),
    ("I take my dogs to the park to show them new trails.", True),
    # a line that introduces a pasted block claims nothing (BEAM: "And my JS chart code:" replaced
    # "I'm trying to integrate Chart.js v4.3.0 into my dashboard")
    ("And my JS chart code:", False),
    ("And here's a basic example of how I might set up my Chart.js pie chart:", False),
    ("My stack is: Flask and SQLite.", True),
    ("", False),
]


@pytest.mark.parametrize("statement,ok", HOLDS_STATE_CASES)
def test_holds_state(statement: str, ok: bool) -> None:
    assert holds_state(statement) is ok


@pytest.mark.parametrize("new, old, ok", [
    # a standing instruction gives way only to another instruction
    ("From now on, answer in French.", "Always answer in English when I ask about travel.", True),
    ("Given that I have to provide security best practices when discussing authentication features",
     "Always provide security best practices when I ask about authentication or authorization features.", False),
    ("Sure, let's proceed with measuring the metrics now.",
     "Always report exact performance metrics when I ask about site speed improvements.", False),
    # an instruction may replace a state (the user's new rule about their answers)
    ("Never suggest meat dishes when I ask about recipes.", "I love cooking steak.", True),
    # two tasks in progress do not replace each other; a state the task changes is replaced
    ("I'm trying to validate the area calculation of a triangular garden plot",
     "I'm trying to apply Heron's formula to find the area of a triangle", False),
    ("I'm kinda struggling with editing my drafts", "I'm trying to organize my essay draft better", False),
    ("I'm trying to switch from SQLite to PostgreSQL 15", "I'm using SQLite 3.39 as my database", True),
    # a first-person state is replaced by what the person says of themselves, not by a remark on a thing
    ("However, for the sake of keeping the app lightweight and under 2.5MB, this approach could be a starting point.",
     "I'm trying to keep my weather app under 2.5MB", False),
    ("Tea is my thing now.", "I drink coffee every morning.", True),
    ("The gym closed down last month.", "The gym opens at six.", True),
    # neither side may be a question or a response
    ("I switched to tea.", "I drink coffee every morning.", True),
    ("How often do you hike now?", "I hike every weekend.", False),
    ("I hike on Sundays now.", "Keep it up!", False),
])
def test_may_replace(new: str, old: str, ok: bool) -> None:
    assert may_replace(new, old) is ok


@pytest.mark.parametrize("nk,sk,nh,sh,ok", [
    ("preference", "circumstance", "user", "user", True),   # the replaced turn's setting goes with it
    ("belief", "circumstance", "user", "user", True),
    ("preference", "experience", "user", "user", True),     # everything may_supersede allows
    ("preference", "circumstance", "user", "Ann", False),   # never across holders
    ("event", "circumstance", "user", "user", False),
    ("plan", "preference", "user", "user", False),
    ("experience", "circumstance", "user", "user", False),
])
def test_may_supersede_sibling(nk: str, sk: str, nh: str, sh: str, ok: bool) -> None:
    assert may_supersede_sibling(nk, sk, nh, sh) is ok
    assert edge_kinds_allowed(nk, sk) is (ok or nh != sh)  # the store accepts every edge the adjudicator may make
    if sk == "circumstance" and nk in ("preference", "belief"):
        assert not may_supersede(nk, sk, nh, sh, True)  # only as a sibling, never on its own


@pytest.mark.parametrize("turn,ok", [
    # a change of direction turns against something
    (["I've shifted my focus.", "I'm now really drawn to West African drumming."], True),
    (["I tried that playful approach, but it just didn't feel right for me."], True),
    (["I no longer enjoy jazz."], True),
    (["I'm actually more curious about Indian classical music theory now."], True),
    (["I really prefer techno now."], True),
    (["Lately I realized that theory isn't my forte."], True),
    # "now" / "lately" alone report progress on the same path (LoCoMo)
    (["Now I'm passionate about creating a safe, inviting place for people to grow."], False),
    (["Growing my customer base is the main focus right now."], False),
    (["We love painting together lately, especially nature-inspired ones."], False),
    (["I'm not giving up!", "I'm trying to juggle studying with my reading hobby."], False),
    (["After that book swap fiasco, I've given up on exchanging books entirely."], True),
    (["I haven't given up on my novel.", "I've never given up on it."], False),
    # taking back what one said earlier is a reversal even without a "but"
    (["I know I said I was uncomfortable sharing personal details.", "I now believe being open could help someone."], True),
    (["I decided to give podcasting another shot.", "It was so much more fun with a co-host."], True),
    (["After much contemplation, I've decided to step away from volunteering."], True),
    (["I've grown weary of those large community networking events."], True),
    (["I've been feeling a bit burned out on all the experimental indie films."], True),
    # a concessive "but" turns against a difficulty, not an earlier view
    (["It's been tough, but I'm living my true self.", "Dancing makes me so happy, and now I get to share that."], False),
    (["Finding self-acceptance was a long process, but now I'm ready to offer support."], False),
    (["It was hard to admit, but I no longer enjoy jazz."], True),
    # a "but" that opens a request or a worry turns against nothing (BEAM)
    (["I've set up Flask-Login, but I'm not sure how to handle sessions."], False),
    (["I agreed to stop at 10 PM, but how can I make sure I stick to this schedule?"], False),
    (["I'm using Bootstrap 5.3.0, but I want to make sure the navbar is accessible."], False),
    (["I tried fusion events, but they felt overproduced."], True),
    (["I'm not sure how to say it, but I no longer enjoy jazz."], True),
    ([], False),
])
def test_reverses(turn: list[str], ok: bool) -> None:
    assert reverses(turn) is ok


@pytest.mark.parametrize("statement,ok", [
    ("Still can't seem to find any dog-friendly spots to rent.", True),
    ("Now I want to help people go through it too.", True),
    ("I totally agree that we should fight for more money for our schools.", True),
    ("I also love baking.", True),
    ("I still like jazz, but I prefer techno now.", False),  # turns against the old view
    ("I switched to tea.", False),
    ("I love painting lately.", False),
])
def test_continues(statement: str, ok: bool) -> None:
    assert continues(statement) is ok
