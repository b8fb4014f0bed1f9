"""Run-on sentences split into clauses, so a fact is one proposition.

People typing to an assistant chain several statements and a request into one sentence: "I've been
working with Megan on our drafts since August 5, and we made some major tone adjustments by August 12,
but I'm not sure if I should stick with these changes, can you help me decide?" As one fact, that line
costs a context its 40 words whichever part a request needs, and its request clause ("can you help me
decide?") is no fact at all. Split at the joints where a new subject starts a new statement, each part
is its own fact (a verbatim slice of the turn, as before) and the request clause, ending in "?", is
left out by the extractor's informativeness test like any question. Short sentences are never split:
only a run-on (``min_chars``) has several propositions to separate.
"""

from __future__ import annotations

import re

_SUBJECT = r"(?:I|I'm|I've|I'd|I'll|Im|Ive|we|we're|we've|my|our|it|it's|she|he|they|there)"
# A joint: a comma before a conjunction that opens a clause with its own subject, a comma before a
# request to the assistant, or a dash before a question. The joint's words are dropped from both sides;
# "and"/"but" start no proposition. Not a semicolon: it joins two halves of one account, and splitting
# there let one MemSyco row's outdated half escape its replacement (leak 0.26 -> 0.28; BEAM unchanged).
JOINT = re.compile(
    rf",\s+(?:and|but|so|because|since|though|although|while|yet)\s+(?={_SUBJECT}\b)"
    r"|,\s+(?=(?:can|could|would|will) you\b|(?:how|what|which|should|do|does|is|are) (?:I|we|you|it|there)\b)"
    r"|\s+-{1,2}\s+(?=(?:what|how|can|could|which|should|do|is|are)\b)", re.I)
_MIN_PART = 30  # characters: a shorter part is a fragment ("and so on"), kept with its neighbour


def clauses(text: str, start: int, end: int, min_chars: int) -> list[tuple[int, int]]:
    """(start, end) spans of the clauses of the sentence ``text[start:end]``; the sentence itself when
    it is ``min_chars`` or shorter (0: never split) or has no joint.

    >>> s = "I've been working with Megan since August 5, and we made major tone changes by August 12, can you help?"
    >>> [s[a:b] for a, b in clauses(s, 0, len(s), 40)]
    ["I've been working with Megan since August 5", 'we made major tone changes by August 12', 'can you help?']
    """
    if min_chars <= 0 or end - start <= min_chars:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    at = start
    request_tail = text[start:end].rstrip().endswith("?")  # a short closing request still parts from the statement
    for m in JOINT.finditer(text, start, end):
        if m.start() - at >= _MIN_PART and (end - m.end() >= _MIN_PART or request_tail):
            out.append((at, m.start()))
            at = m.end()
    out.append((at, end))
    return out
