"""Who says a statement: a speaker label in front of it, and whether it is said in the first person."""

from __future__ import annotations

from induction.reading.cues import CueSet

# A speaker label a transcript puts before a line ("Andrew: I miss hiking.", "Dr. Patel: …"): one or two
# capitalised words and a colon.
HOLDER_PREFIX = CueSet("holder prefix", [
    ("speaker label", r"[A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30})?:\s+"),
], head=r"^(?:", tail=r")", flags=0)

# A person's own state ("I'm trying to keep my app under 2.5MB") changes when they say so about themselves or
# what is theirs ("my app is 5MB now", "tea is my thing now"); a remark about something else ("this approach
# could be a starting point") replaces nothing of theirs.
SELF = CueSet("first person", [
    # singular first person, with the common apostrophe-less chat spellings (Im, Ive)
    ("first person singular", r"I|I'm|I've|I'd|I'll|Im|Ive|my|me|mine|myself"),
    # plural first person: a couple or a family speaking of itself
    ("first person plural", r"we|we're|we've|our|ours|us|ourselves"),
])


def unprefixed(statement: str) -> str:
    """``statement`` without its ``"Name: "`` holder prefix (and outer whitespace).

    >>> unprefixed("Andrew: I miss hiking.")
    'I miss hiking.'
    """
    return HOLDER_PREFIX.regex.sub("", statement.strip(), count=1)


def speaks_of_self(statement: str) -> bool:
    """True when ``statement`` is said in the first person (its ``"Name: "`` prefix left out).

    >>> speaks_of_self("Tea is my thing now."), speaks_of_self("This approach could be a starting point.")
    (True, False)
    """
    return SELF.regex.search(unprefixed(statement)) is not None
