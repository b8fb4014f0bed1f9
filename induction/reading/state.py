"""Does a statement hold a state of its speaker, and may one statement replace another at all?

A question or a request (``questions``) asks and a reply to someone else (``responses``) responds: neither is a
preference, belief or circumstance that a later statement could replace, or that could replace one.
"""

from __future__ import annotations

from induction.reading.cues import CueSet
from induction.reading.holder import speaks_of_self, unprefixed
from induction.reading.instructions import standing_instruction
from induction.reading.questions import asks
from induction.reading.responses import responds

# A task in progress or a difficulty with one, said in the first person ("I'm trying to fix the boiler", "I'm
# kinda stuck on this crossword"): people work on several at once, so a new one replaces no other. A state it
# changes ("I use the bus" -> "I'm trying to switch to cycling") is still replaced.
IN_PROGRESS = CueSet("task in progress", [
    ("attempt under way", r"trying to|working on"),
    ("difficulty", r"struggling|stuck|having (?:some |a lot of )?trouble|not sure|confused|worried"),
], head=r"^(?:so |and |but |well,? )?(?:I'm|I am|I've been|I have been)(?: (?:kinda|kind of|really|still|currently|"
        r"just|a bit|also|now))* (?:", tail=r")\b")


def holds_state(statement: str) -> bool:
    """False for a question, a request for help, or a response to someone else (encouragement, advice, a
    remark on their news): such a statement never supersedes and is never superseded (nor disputed),
    whatever a model proposes. A ``"Name: "`` holder prefix is ignored.

    >>> holds_state("I switched to tea."), holds_state("How often do you hike now?"), holds_state("Keep it up!")
    (True, False, False)
    """
    s = unprefixed(statement).strip()
    return bool(s) and not asks(s) and not responds(s)


def in_progress(statement: str) -> bool:
    """True for a task in progress or a difficulty with one, said in the first person.

    >>> in_progress("I'm kinda stuck on this one"), in_progress("I'm trying to switch to PostgreSQL")
    (True, True)
    >>> in_progress("I use SQLite for my database."), in_progress("I'm planning a trip to Kyoto.")
    (False, False)
    """
    return IN_PROGRESS.regex.search(unprefixed(statement)) is not None


def may_replace(new_statement: str, old_statement: str) -> bool:
    """Whether ``new_statement`` can replace ``old_statement`` at all, whatever a model proposes: both
    hold state (``holds_state``), they are not two tasks in progress (``in_progress``), a standing
    instruction ("Always include version numbers when I ask about libraries") gives way only to another
    instruction, and a first-person state only to a first-person statement (``speaks_of_self``). A
    remark on an instruction's topic ("Given that I have to provide security best practices, …")
    restates or applies it; it does not revoke it.

    >>> may_replace("Always answer in French.", "Always answer in English.")
    True
    >>> may_replace("Sure, let's proceed with measuring the metrics now.", "Always report exact metrics when I ask about speed.")
    False
    >>> may_replace("I switched to tea.", "I drink coffee every morning.")
    True
    >>> may_replace("I'm trying to validate the area of a garden plot", "I'm trying to apply Heron's formula")
    False
    >>> may_replace("However, this approach could be a starting point.", "I'm trying to keep my app under 2.5MB")
    False
    """
    if not (holds_state(new_statement) and holds_state(old_statement)):
        return False
    if in_progress(new_statement) and in_progress(old_statement):
        return False
    order = standing_instruction(new_statement)
    if order or standing_instruction(old_statement):
        return order  # an order gives way to an order, whatever its person
    return speaks_of_self(new_statement) or not speaks_of_self(old_statement)
