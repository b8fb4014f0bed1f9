"""What the instruction route looks for: a person's standing instruction about how to answer later requests
("Always include version numbers when I ask about libraries", "Never use jargon", "From now on, reply in
French"). It applies to every later request on its topic, so retrieval gives it a route of its own (rank.py).

This is the one reading of English that retrieval needs at read time, so it lives with its route (retrieval
sits below induction, where statements are read; ``induction.reading.instructions`` re-exports it for the
relation gates). Each class has a test sentence in tests/test_reading.py.
"""

from __future__ import annotations

import re

# An order about how to answer from now on, opened by a frequency or time adverb ("Always cite the source",
# "From now on, keep it short"). A clipped statement about oneself ("Never been to Japan", "Always loved jazz")
# is no order: the adverb is followed by a participle or a past tense.
_ORDER = (r"^(?:please\s+)?(?:always|never|from now on|going forward|whenever I ask|every time I ask)\b"
          r"(?!,?\s+(?:been|had|was|were|did|have|seen|tried|thought|knew|gone|really|loved|liked|felt|wanted)\b)")
# An instruction tied to a kind of request ("Give me metric units when I ask about recipes").
_WHEN_I_ASK = r"\b(?:when(?:ever)?|each time|every time) I ask (?:you )?(?:about|for|how|what|to)\b"
STANDING_CLASSES: tuple[tuple[str, str], ...] = (("adverb-led order", _ORDER), ("when-I-ask instruction", _WHEN_I_ASK))
_STANDING = re.compile("|".join(p for _, p in STANDING_CLASSES), re.I)


def standing_instruction(statement: str) -> bool:
    """True for a person's standing instruction about how to answer later requests.

    >>> standing_instruction("Always include version numbers when I ask about software dependencies.")
    True
    >>> standing_instruction("I've never used Zotero."), standing_instruction("I always run in the morning.")
    (False, False)
    """
    return bool(_STANDING.search(statement.strip()))
