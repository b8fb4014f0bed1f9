"""Polarity of a statement: does it negate what it says ("I don't eat meat", "I never fly", "I quit smoking")?

Polarity is a property of the state a fact holds, not of the words "not" / "never": emphasis ("not only",
"can't wait", "never forget"), a positive idiom built on a negation ("I can't get enough of it", "I couldn't be
happier") and a first time ("I'd never tried sushi before") negate nothing. Read as polarity, they would let
"Now I can't get enough of films" replace what it grew out of as if it reversed it.
"""

from __future__ import annotations

from induction.reading.cues import CueSet

NEGATION = CueSet("negation", [
    # "not", but not emphasis: "not only", "not just", "not bad", "not sure"
    ("not", r"\b(?:not(?! only| just| merely| alone| bad| sure))\b"),
    # "never", but not "never forget", "never been happier", nor a first time: "never … before"
    ("never", r"\b(?:never(?! forget| been happier)(?![^.!?;]{0,60}\bbefore\b))\b"),
    # "I no longer drive"
    ("no longer", r"\b(?:no longer)\b"),
    # an aversion: "I hate queues", "I avoid dairy", "karaoke isn't for me"
    ("aversion", r"\b(?:hate\w*|dislike\w*|avoid\w*|can't stand|isn't for me|wasn't for me)\b"),
    # stopping (not "can't stop"): "I stopped eating sugar", "I quit the band"
    ("stopping", r"\b(?:(?<!n't )stop(?:ped)?|quit)\b"),
    # a contracted negation, but not in idioms: "can't wait", "can't help", "can't get enough", "couldn't be happier"
    ("contracted not", r"n't\b(?! only| just| wait| help| believe| imagine| forget| get enough| be happier| stop)"),
], head="(?:", tail=")")


def negates(text: str) -> bool:
    """Does ``text`` negate what it says (see the module docstring for what does not count)?

    >>> negates("I don't eat meat."), negates("I can't wait for the concert."), negates("I'd never tried sushi before.")
    (True, False, False)
    """
    return bool(NEGATION.regex.search(text))
