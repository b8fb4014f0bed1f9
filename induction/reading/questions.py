"""Statements that ask rather than state: a question, a request to the other person, a request for help.

Such a statement holds no state of its speaker (``induction.reading.state.holds_state``): nothing a later
message could replace, or outside evidence dispute.
"""

from __future__ import annotations

from induction.reading.cues import CueSet

# A question without its question mark (chat drops it): a wh-word or an auxiliary opens a sentence that has
# no full stop or exclamation ("how often do you go running now", "is the bakery open on sundays").
QUESTION_START = CueSet("question opening", [
    ("wh-question", r"how|what|why|when|where|who|whom|which|whose"),
    ("yes-no question", r"do|does|did|have|has|had|are|is|was|were|can|could|would|will|should|shall|may"),
    ("any-question", r"any|anything"),
], head=r"^(?:", tail=r")\b[^.!]*$")

# A request to the other person ("Send me the recipe", "Take some pics and show me what you enjoy"): an
# imperative of giving or showing aimed at the speaker.
REQUEST = CueSet("request to the listener", [
    ("imperative aimed at the speaker", r"take|show|send|tell|give|bring|check out|look at|come"),
], head=r"^(?:please |so |and )?(?:", tail=r")\b[^.!?]{0,60}\b(?:me|us)\b")

# A request for help or information inside a statement ("I'm not sure how to set the timer", "I'd appreciate
# any help moving the sofa", "I'm wondering if the library opens late"): it asks, it states nothing.
ASKS = CueSet("request for help", [
    # asking the listener to do something
    ("plea for help", r"help me|can you|could you|would you|I'?d appreciate|I would appreciate|"
                      r"I need (?:some |your )?help"),
    # an indirect question
    ("wondering", r"I(?:'m| am| was) wondering"),
    # uncertainty about how to go on
    ("stated uncertainty", r"I'?m not sure (?:how|what|if|whether|which|about)|"
                           r"I'?m trying to (?:figure out|understand|decide)"),
])


def asks(statement: str) -> bool:
    """A question (with or without its mark), a line that introduces what follows (ends in a colon), a request
    to the listener, or a request for help. ``statement`` is already stripped of its holder prefix.

    >>> asks("where did you park"), asks("Send me the recipe please."), asks("I moved to Leeds.")
    (True, True, False)
    """
    s = statement.strip()
    # a line ending in a colon introduces what follows (pasted code, a list): "And my shopping list:"
    return bool(s.endswith(("?", ":")) or QUESTION_START.regex.match(s) or REQUEST.regex.match(s)
                or ASKS.regex.search(s))
