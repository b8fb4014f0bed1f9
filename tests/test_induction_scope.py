"""Scope induced from phrasing (induction/scope.py) and carried by the offline extractor's facts."""

from __future__ import annotations

from typing import Any

import pytest

from induction.offline import extract_offline
from induction.scope import scopes_in
from induction.session import Session, SessionTurn as Turn


@pytest.mark.parametrize("text, expected", [
    # condition clauses, fronted or trailing
    ("When I design something for myself, I usually remove elements.", ["when I design something for myself"]),
    ("If I control the schedule, I normally put demanding activities first.", ["if I control the schedule"]),
    ("I prefer making decisions once a workable option is clear.", ["once a workable option is clear"]),
    ("I generally prefer open-source software when it can do the job well.", ["when it can do the job well"]),
    ("Unless the connection is genuinely impractical, a private car feels unnecessary.",
     ["unless the connection is genuinely impractical"]),
    ("When two products can serve the same purpose, I accept a little extra cleaning.",
     ["when two products can serve the same purpose"]),
    ("I feel more comfortable making decisions when I can compare measurable criteria.",
     ["when I can compare measurable criteria"]),
    ("Whenever we travel for work I pack light.", ["whenever we travel for work"]),
    ("When traveling, I like to keep the plan loose.", ["when traveling"]),
    ("I'm fine with spicy food as long as there is rice.", ["as long as there is rice"]),
    # fronted framing phrases
    ("For trips or group projects, an early start makes the day feel spacious.", ["for trips or group projects"]),
    ("For work updates, I strongly prefer bullet points over long paragraphs.", ["for work updates"]),
    ("On weekdays, I eat a light lunch.", ["on weekdays"]),
    ("As a teacher, I prefer clear rubrics.", ["as a teacher"]),
    ("For small personal decisions, a sentence and a next action should be enough.", ["for small personal decisions"]),
    # domain, company, time and place
    ("When it comes to coffee, I only drink espresso.", ["when it comes to coffee"]),
    ("I strongly prefer asynchronous communication at work.", ["at work"]),
    ("I like quiet restaurants with my family.", ["with my family"]),
    ("I prefer aisle seats on work trips.", ["on work trips"]),
    ("I use a paper planner for my own projects.", ["for my own projects"]),
    ("I read thrillers in my free time.", ["in my free time"]),
    ("I go vegetarian during the week but eat meat on weekends.", ["during the week", "on weekends"]),
    # not a scope: time anchors of what happened, whether-clauses, contrasts, discourse markers, "you"
    ("When I was a kid, I loved horses.", []),
    ("If I knew what would justify reopening it, I could stop collecting details.", []),
    ("I don't know if I can make it to the game.", []),
    ("Two enjoy walking, while another prefers shorter distances.", []),
    ("For example, I keep one page of notes.", []),
    ("In my opinion, the plan is sound.", []),
    ("If you want, we can meet later.", []),
    ("At the same time, it should remain readable.", []),
    ("I prefer starting early.", []),
    ("I see them at least once a week.", []),
    ("If there's anything else I can do, just let me know.", []),
    ("I have acquired some new pieces for my store.", []),  # a complement, not a condition
    ("Caroline went to the LGBTQ support group yesterday.", []),
    # issue 44, later session (classes missing on the phrasing tuning half; sentences written here):
    # a condition clause opened by the chat register's "im" / "ive"
    ("when im streaming i mute the chat", ["when im streaming"]),
    # a fronted phrase without its comma, ended by the first-person subject of the clause
    ("For hill runs I wear the old trainers.", ["for hill runs"]),
    ("During Lent we skip dessert.", ["during Lent"]),
    ("With my accountant I'd rather talk on the phone.", ["with my accountant"]),
    ("At the allotment next to the school we grow only beans.", ["at the allotment next to the school"]),
    # a longer fronted phrase with its comma
    ("For anything to do with my dad's pension, please cc my sister.", ["for anything to do with my dad's pension"]),
    # ... but not a discourse opener or a time said bare
    ("At first I found it hard.", []),
    ("In fact we liked it.", []),
    ("For years I lived on the coast.", []),
    ("At least I tried.", []),
    ("In 2019 I moved to Cork.", []),
    ("After that, I called the plumber.", []),
    # "after" / "before" an event anchors a time, it sets no condition (only a clock time, a meal or bed does)
    ("After that festival, I now prefer quiet acoustic sets.", []),
    ("Before the move, we mostly cooked pasta.", []),
    # the chat register's lower-case fronted phrases and subjects; times of day and company as conditions
    ("for invoices i use a spreadsheet", ["for invoices"]),
    ("at the office im always on mute", ["at the office"]),
    ("no fizzy drinks after 6pm for me", ["after 6pm"]),
    ("On weeknights I keep dinner simple.", ["on weeknights"]),
    ("Around my grandparents I speak only Polish.", ["around my grandparents"]),
    # issue 44, session 5 (H2): classes written before scoring, sentences from no benchmark.
    # "every / each / any time" opens a condition clause like "whenever"; told in the past it anchors a time
    ("Every time I fly I take the window seat.", ["every time I fly"]),
    ("Each time we visit my aunt, we bring flowers.", ["each time we visit my aunt"]),
    ("Every time we argued, it ended badly.", []),
    # "while" / "whilst" with what one is doing or where one is; with a stative verb it contrasts
    ("While driving I only listen to podcasts.", ["while driving"]),
    ("I keep my phone face down while I'm at the dinner table.", ["while I'm at the dinner table"]),
    ("While I like jazz, I prefer rock.", []),
    # an elliptical condition: subordinator + place or state, no subject or verb
    ("Whilst abroad I use a prepaid card.", ["whilst abroad"]),
    ("When abroad, I stick to bottled water.", ["when abroad"]),
    # a recurring time: adjective + plural day word, a recurring period after "during", British "at the weekend"
    ("I wear a hat on sunny days.", ["on sunny days"]),
    ("I met my wife on a rainy day in 2010.", []),
    ("I don't drink coffee during exam season.", ["during exam season"]),
    ("I moved to Leeds during the pandemic.", []),
    ("I sleep late at the weekend.", ["at the weekend"]),
    # before / after a recurring event (plural); a single past event anchors a time
    ("Before big meetings I skip lunch.", ["before big meetings"]),
    ("I stretch after workouts.", ["after workouts"]),
    ("After years of trying, I finally like olives.", []),
    # settings: company by kinship or role noun, an audience, a place of its own kind, a duty
    ("I speak French with my in-laws.", ["with my in-laws"]),
    ("I don't swear in front of my nephews.", ["in front of my nephews"]),
    ("I listen to audiobooks in the car.", ["in the car"]),
    ("In public I keep my voice down.", ["in public"]),
    ("I take the stairs in the office.", ["in the office"]),
    ("as a nurse on nights i sleep in the day", ["on nights"]),
    # the chat register's "wen" for "when"
    ("wen im at my moms i eat whatever she cooks", ["wen im at my moms"]),
    # an exception to the statement ("except" / "apart from" / "other than" + a setting or a condition)
    ("I eat meat, except at my grandma's.", ["except at my grandma's"]),
    ("I'm vegetarian apart from when I travel.", ["apart from when I travel"]),
    # "outside work hours"; a plural recurring event as the setting; the weekend, US and British
    ("I don't check email outside work hours.", ["outside work hours"]),
    ("I keep my phone off in meetings.", ["in meetings"]),
    ("I wear a suit to interviews.", ["to interviews"]),
    ("I cook big batches over the weekend.", ["over the weekend"]),
    # a state after a present "be": the -ed form is an adjective, not a past ("when I was stressed" stays a time)
    ("I bake bread when I'm stressed.", ["when I'm stressed"]),
    ("When stressed I bake bread.", ["when stressed"]),
    ("When I was stressed, I baked bread.", []),
    # a condition clause ends at the main clause's "we"
    ("When my partner's home we cook together.", ["when my partner's home"]),
    # issue 44, session 6 (H2): 48 scope sentences written before any scoring (the classes people use: at work,
    # when it's cold, only on weekends, for my kids, except when travelling, around my in-laws, ...); these were
    # the 7 it missed, one per class, with a counter-example where the class could overreach.
    # "for" + an activity as the setting: a gerund, a kind of work, a sport ("thanks for asking" is no scope)
    ("I wear contacts for football.", ["for football"]),
    ("I use the Mac for design work and the PC for gaming.", ["for design work", "for gaming"]),
    ("Thanks for asking.", []),
    ("Thanks for your hard work.", []),
    # before / after an occasion said with "a" or as any plural ("after years" measures a time, it does not scope)
    ("After a long shift I just want silence.", ["after a long shift"]),
    ("Before presentations I can't eat.", ["before presentations"]),
    ("After things calmed down we moved on.", []),
    # the chat register's "its" for "it's" opens a condition clause
    ("i only take the car if its pouring", ["if its pouring"]),
    # public transport and meals as the setting
    ("I wear a mask on the underground.", ["on the underground"]),
    ("I'm fine with spicy food, just not at breakfast.", ["just not at breakfast"]),
    ("I never have dessert at lunch.", ["at lunch"]),
    # and some of the 41 it already read (kept as regressions)
    ("When it's cold I take the tram instead of cycling.", ["when it's cold"]),
    ("I go running only on weekends.", ["on weekends"]),
    ("For my kids I buy organic milk.", ["for my kids"]),
    ("I keep a strict bedtime, except when travelling.", ["except when travelling"]),
    ("Around my in-laws I skip the wine.", ["around my in-laws"]),
    ("Whenever my knee acts up I skip the stairs.", ["whenever my knee acts up"]),
    ("On rainy days I read in bed.", ["on rainy days"]),
    ("For long drives I like audiobooks.", ["for long drives"]),
    ("I take the bus when it snows.", ["when it snows"]),
    ("On holiday I never check email.", ["on holiday"]),
    # a second batch of 34, written after the fixes above, missed two classes:
    # a named feast or holiday as the setting
    ("At the moment I'm off sugar, but at Christmas anything goes.", ["at Christmas"]),
    # a fronted participle clause of what one is doing (a participle about the talk itself frames, it does not scope)
    ("Working from home, I wear pyjamas all day.", ["working from home"]),
    ("Speaking of which, I love cake.", []),
    ("Looking back, I was naive.", []),
    # and some it read
    ("When I have guests over I cook Persian food.", ["when I have guests over"]),
    ("on my days off i dont set an alarm", ["on my days off"]),
    ("In hot weather I drink my coffee iced.", ["in hot weather"]),
    ("When we lived in Oslo we skied a lot.", []),
])
def test_scopes_in(text: str, expected: list[str]) -> None:
    assert scopes_in(text) == expected


def test_at_most_limit_phrases_in_order() -> None:
    text = "On weekdays, I run at the gym with friends when it is dry."
    assert scopes_in(text, limit=2) == ["on weekdays", "at the gym"]
    assert len(scopes_in(text, limit=4)) == 4


def _facts(*user_turns: str) -> dict[str, str | None]:
    s = Session.model_validate({"session_id": "s", "user_id": "u",
                                "turns": [Turn(role="user", text=t).model_dump() for t in user_turns]})
    return {f.statement: f.scope for f in extract_offline(s)}


def test_extracted_facts_carry_their_scope() -> None:
    got = _facts("I strongly prefer minimalist design. I like generous space and restrained color. "
                 "When I design something for myself, I usually remove elements until the page feels calm.",
                 "Last summer I went hiking with friends in the Alps and it was wonderful.")
    # The headline preference states no condition itself: the condition said beside it in the turn is its scope.
    assert got["I strongly prefer minimalist design."] == "when I design something for myself"
    assert got["When I design something for myself, I usually remove elements until the page feels calm."] \
        == "when I design something for myself"
    # What happened once is not scoped by who was there.
    assert all(scope is None for st, scope in got.items() if st.startswith("Last summer"))


def test_a_fact_no_cue_classed_keeps_its_scope_unless_it_tells_what_happened() -> None:
    """A verbless or lower-case chat line ("For my podcast, clean language only.") gets no cue-word kind; its
    fronted scope still holds. A past-tense line under the same phrase tells what happened and stays unscoped."""
    got = _facts("For my podcast, clean language only.", "on sundays i cook for the whole street, keep sunday free",
                 "For my podcast, I interviewed a beekeeper.")
    assert got["For my podcast, clean language only."] == "for my podcast"
    assert got["on sundays i cook for the whole street, keep sunday free"] == "on sundays"
    assert got["For my podcast, I interviewed a beekeeper."] is None


def test_a_habit_told_with_a_verb_of_doing_keeps_its_scope() -> None:
    """"read", "made", "moved" made a sentence an event, and events are never scoped: a bare present with a scope
    is a habit (induction/reading/aspect.py), so it keeps the scope; a dated occasion under the same phrase does not."""
    got = _facts("In the evenings I read fiction.", "On rainy days I read in bed.",
                 "In the evenings last week I read a biography.")
    assert got["In the evenings I read fiction."] == "in the evenings"
    assert got["On rainy days I read in bed."] == "on rainy days"
    assert got["In the evenings last week I read a biography."] is None


def test_a_scoped_fact_is_retrieved_out_of_scope_and_rendered_with_it(embedded_memory: Any) -> None:
    """Scope informs use, never retrieval: a request outside the scope still gets the fact, marked."""
    from retrieval.render import render_context
    from induction.config import IngestConfig
    from induction.offline import OfflineExtractor
    from induction.pipeline import Ingestor

    s = Session.model_validate({"session_id": "s1", "user_id": "maya", "turns": [
        {"role": "user", "text": "I always book aisle seats on work trips because I get up a lot."}]})
    Ingestor(embedded_memory, OfflineExtractor(), None, IngestConfig(adjudicator="rules")).ingest(s)
    b = embedded_memory.retrieve("maya", "which seats should I book for my family vacation flight?", k=3)
    item = next(i for i in b.items if "aisle seats" in i.fact.statement)
    assert item.state.scope == "on work trips"
    assert "[only on work trips]" in render_context(b).text


def test_a_clause_attached_adjunct_scopes_its_own_sentence_not_the_turn() -> None:
    """Class: "while" + what one is doing, and "except …", attach to their own clause; a turn-level scope (for
    the turn's other statements) leaves them out. Sentences from no benchmark."""
    from induction.scope import scopes_in

    text = "I've switched to audiobooks. I listen while walking the dog, which is great."
    assert scopes_in(text) == ["while walking the dog"]
    assert scopes_in(text, turn=True) == []
    assert scopes_in("I eat meat, except at my grandma's.", turn=True) == []
    assert scopes_in("At work, I only drink tea.", turn=True) == ["at work"]
