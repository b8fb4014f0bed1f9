"""Tense and aspect: does a statement tell what happened, or say what holds now?

The offline extractor gives a sentence the kind *event* when it meets a verb of doing ("moved", "got",
"made", "read"). That word says nothing about the main clause's tense: a report of a change often ends in the
state it left ("Got promoted, I'm head of operations now"), a change of arrangement names its result ("Moved my
savings to a credit union"), a habit uses the bare form ("In the evenings I read fiction") and a claim about the
world may hold a participle ("Pearls are made by oysters", "a man-made lake"). Read as events, such statements
can never replace, or be replaced by, the states they change (``graph.rules.can_supersede``), and a claim read
as an event cannot be disputed by evidence (``graph.rules.may_conflict``).

``aspect`` reads the clauses of a sentence and names one of these readings, most specific first:

- ``result``: a present state the sentence asserts, in one of four shapes —
  a first-person (or subjectless) present clause with a *change adverb* ("now", "these days", "anymore",
  "no longer", "at the moment", "still"): "so I'm a night owl now", "I cycle to work these days";
  a verb of *replacing an arrangement* (move, switch, change, swap, transfer, migrate, convert, upgrade,
  downgrade) with its goal ("to" / "into" / "over to"), in the past or the present perfect: "Moved my savings
  to a credit union", "I've switched my phone plan over to prepaid";
  a verb of *becoming* with its result ("became", "have become", "went / gone" + a bare predicate,
  "turned" + adjective): "I've become a morning person", "went freelance in March";
- ``habitual``: a first-person clause with a lexical verb in the bare present and a *recurrence* marker
  ("every", "usually", "on weekdays", "in the evenings", "twice a week") or a scope (``induction.scope``: "on
  rainy days", "when it's cold"), and no time that dates one occasion: "In the evenings I read poetry";
- ``generic``: no first-person word at all, a present finite verb, no past form of a verb: "Pearls are made by
  oysters", "A man-made lake holds no fish"; or a general rule said first (an impersonal "you" with a modal, a
  gerund subject), before what the speaker does about it: "You have to soak chickpeas overnight, so I ...";
- ``past``: a clause in the simple past, nothing of the above: "We made pancakes on Sunday";
- ``None``: nothing to go by.

What it cannot do: read a state implied by a bare past without a goal ("We sold the old car and bought a
van"), or tell a present-perfect experience ("I've read that book") from a result without a change verb.
"""

from __future__ import annotations

import re
from typing import Literal

from induction.reading.cues import CueSet
from induction.scope import scopes_in

Aspect = Literal["result", "habitual", "generic", "past"]

_TYPO = str.maketrans({"\u2018": "'", "\u2019": "'"})
_SELF = re.compile(r"(?:^|[^A-Za-z'])(?:I|I'm|I've|I'd|I'll|im|ive|me|my|mine|myself|we|we're|we've|our|us)"
                   r"(?=$|[^A-Za-z'])", re.I)
# The irregular preterites of English (a closed class of the grammar), plus any -ed form.
_IRREGULAR_PAST = (r"was|were|had|did|went|came|saw|felt|found|made|got|took|became|began|thought|knew|told|said|"
                   r"spent|met|left|bought|sold|ran|won|lost|wrote|gave|drove|ate|drank|sat|stood|heard|paid|brought|"
                   r"caught|taught|fought|built|sent|kept|slept|swam|sang|forgot|broke|chose|wore|flew|threw|rode|fell|"
                   r"grew|drew|held|led|hid|shook|stole|woke")
_PAST = re.compile(rf"\b(?:{_IRREGULAR_PAST}|[a-z]{{2,}}ed)\b", re.I)
# A clause boundary inside a sentence: punctuation, a dash, or a coordinator/subordinator that opens a clause.
_CLAUSE = re.compile(r"\s*(?:[,;:()]|\s-+\s|\b(?:so|and|but|because|since|though|although)\b)\s*", re.I)

# A present state the clause asserts against an earlier one: the change adverbs.
CHANGE_ADVERB = CueSet("change adverb", [
    ("now", r"now|nowadays|these days|this days|at the moment|atm|rn|at present|currently"),
    ("no more", r"any ?more|any longer|no longer"),
    ("still", r"still"),
])
# A present finite verb of a first-person or subjectless clause: a form of "be" or "have", or a lexical verb
# after I / we in its bare form (not a preterite); a clause with no subject starts with its verb or predicate.
_BE_HAVE = (r"(?:I'm|I am|im|we're|we are|I've got|we've got|I have|we have|I own|we own|I don't|I do not|we don't|"
            r"we do not|I can't|I cannot|we can't)")
_PRESENT_SELF = re.compile(rf"\b(?:{_BE_HAVE}\b|(?:I|we)\s+(?:\w+ly\s+|also\s+|just\s+|only\s+)?"
                           rf"(?!(?:{_IRREGULAR_PAST}|\w+ed|will|would|could|should|might|must|can|may|do|don't|did|"
                           rf"didn't)\b)[a-z]+\b)", re.I)
_PAST_FINITE = re.compile(rf"\b(?:I|we|he|she|they|it)\s+(?:\w+ly\s+|just\s+|also\s+|then\s+)?(?:{_IRREGULAR_PAST}|"
                          rf"[a-z]{{2,}}ed)\b|^(?:{_IRREGULAR_PAST}|[a-z]{{2,}}ed)\b", re.I)

RESULT = CueSet("result state", [
    # replacing an arrangement, with its goal: "Moved my savings to a credit union", "I've switched my plan over to
    # prepaid", "changed the lock code to 4471"
    ("replacing an arrangement", r"(?:mov|switch|chang|swapp|transferr|migrat|convert|upgrad|downgrad|port)ed\b"
                                 r"(?:\s+(?!to\b|into\b|from\b)[\w'-]+){0,4}?\s+(?:over\s+|across\s+)?(?:to|into)"),
    # becoming, with its result: "I've become a morning person", "went freelance", "turned vegetarian"
    ("becoming", r"(?:became|become|becoming)\s+(?:a|an|more|less|very|so|really|quite|[a-z]+)"
                 r"|(?:went|gone|going|turned)\s+(?!(?:to|into|for|on|off|out|up|down|back|home|away|there|here|in|"
                 r"through|over|by|with|the|a|an|my|our|and|but|so|from|around|about|ahead|abroad|\w+ing)\b)"
                 r"(?:freelance|part-time|full-time|vegan|vegetarian|pescatarian|keto|paleo|sober|teetotal|"
                 r"self-employed|remote|grey|gray|bald|[a-z]+(?:arian|ist|ian|free))\b"),
])
RECURRENCE = CueSet("recurrence", [
    ("frequency adverb", r"usually|always|often|normally|generally|typically|mostly|never|rarely|sometimes|daily|"
                         r"weekly|nightly"),
    ("every", r"every|each (?:day|night|morning|evening|week|weekend|month|year)"),
    ("recurring time", r"(?:on|at) (?:weekends?|weekdays|weeknights|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days)"
                       r"|in the (?:mornings|evenings|afternoons)|(?:once|twice|\w+ times) a (?:day|week|month|year)"
                       r"|before bed|most (?:days|nights|mornings|evenings|weekends)"),
])
# A time that dates one occasion: the clause tells what happened then, not a habit.
_ONCE = re.compile(r"\b(?:yesterday|last (?:night|week|weekend|month|year|\w+day)|ago|this morning|tonight|"
                   r"on (?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b(?!s))", re.I)
# A past time clause: what follows is a habit of then, not of now ("When I was a kid I read comics every night").
_PAST_TIME = re.compile(rf"\b(?:when|whenever|while|back when|as|before|after|until|since|once)\s+(?:I|we)\s+"
                        rf"(?:{_IRREGULAR_PAST}|\w+ed|used to)\b", re.I)
# A present finite verb of a claim about the world: be, have, can, need, do, must.
_PRESENT_GENERIC = re.compile(r"\b(?:is|are|isn't|aren't|has|have|can|can't|cannot|need|needs|does|do|don't|doesn't|"
                              r"must)\b", re.I)


# A general rule said as the sentence's first clause, before what the speaker does about it ("You have to wait a
# day before X, so ...", "shaving makes hair grow back thicker so im ..."): an impersonal "you" with a modal of
# necessity or ability, or a gerund as the subject of a present verb.
_RULE_FIRST = re.compile(r"^(?:you|u)\s+(?:have to|must|need to|can|can't|cannot|should|shouldn't|get|lose|always|never)\b"
                         r"|^[a-z]+ing\s+(?:[a-z]+\s+){0,3}?(?:is|are|makes|gives|causes|keeps|helps|stops|prevents|"
                         r"means|kills|burns|cures|ruins|damages|leads to|turns)\b", re.I)


def _clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE.split(sentence) if c and c.strip()]


def _present_state(clause: str) -> bool:
    """A first-person present clause, or a subjectless one that does not open with a preterite."""
    if _PRESENT_SELF.search(clause):
        return True
    words = clause.split()
    return bool(words) and not _SELF.search(clause) and not _PAST.match(words[0]) and not _PAST_FINITE.search(clause)


def aspect(sentence: str) -> Aspect | None:
    """The reading of ``sentence``'s tense and aspect (see the module's doc).

    >>> aspect("Got promoted, I'm head of operations now."), aspect("Moved my savings to a credit union.")
    ('result', 'result')
    >>> aspect("In the evenings I read poetry."), aspect("Pearls are made by oysters.")
    ('habitual', 'generic')
    >>> aspect("We made pancakes on Sunday."), aspect("Nice.")
    ('past', None)
    """
    s = sentence.translate(_TYPO).strip()
    clauses = _clauses(s)
    for c in clauses:
        if CHANGE_ADVERB.regex.search(c) and _present_state(c):
            return "result"
    if RESULT.regex.search(s):
        return "result"
    recurs = RECURRENCE.regex.search(s) is not None or bool(scopes_in(s))
    if not _ONCE.search(s) and not _PAST_TIME.search(s) and recurs and any(_PRESENT_SELF.search(c) for c in clauses):
        return "habitual"
    if not _SELF.search(s) and not _PAST_FINITE.search(s) and not _ONCE.search(s) and _PRESENT_GENERIC.search(s):
        return "generic"
    first = clauses[0].strip() if clauses else ""
    if _RULE_FIRST.search(first) and not _SELF.search(first) and not _PAST_FINITE.search(first):
        return "generic"
    if _PAST_FINITE.search(s):
        return "past"
    return None


def holds_now(sentence: str) -> bool:
    """True when ``sentence`` says what holds now (a result, a habit or a general claim), whatever verb of doing
    it also holds.

    >>> holds_now("So I'm a night owl now."), holds_now("We made pancakes on Sunday.")
    (True, False)
    """
    return aspect(sentence) in ("result", "habitual", "generic")
