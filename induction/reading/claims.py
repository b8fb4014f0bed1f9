"""A claim about the world that the speaker relays or predicts, held as a belief (what evidence may dispute).

The offline extractor reads such a sentence by its other words: "I read that sloths sleep most of the day" holds
"read" (an event), "My atlas says X" a possessive (a circumstance), "Skipping breakfast is going to slow my
metabolism" holds "going to" (a plan). Each is a claim the speaker holds, and only a belief or a preference can
be disputed by outside evidence (``graph.rules.DISPUTABLE_KINDS``). Classes:

- reported by the speaker: a verb of hearing or reading with a that-clause ("I read that …", "we were told …",
  "I heard somewhere that …"), or a saying of the speaker's people ("in my family we say …", "people say …");
- a source says: a written or spoken source of the speaker's as subject of "says" / "claims" ("My atlas says …",
  "the guy at the gym claims …"), unless what it says is a directive to the speaker ("my coach said no sprinting",
  "the doctor says I shouldn't lift"): an instruction is a constraint, not a claim;
- predicted of a thing: "going to" / "gonna" whose subject is a gerund or "it" / "that" / "this", which cannot
  plan ("Cracking my knuckles is going to give me arthritis").

Every class has a test sentence from no benchmark (tests/test_reading_aspect.py).
"""

from __future__ import annotations

from induction.reading.cues import CueSet

CLAIM = CueSet("relayed or predicted claim", [
    ("reported by the speaker", r"(?:I|we|i)\s+(?:(?:once|always|just|recently)\s+)?(?:read|heard|learned|learnt|"
                                r"was told|were told|have read|'ve read|have heard|'ve heard)\s+(?:somewhere\s+|online\s+|"
                                r"once\s+)?that"
                                r"|(?:we|people|they|everyone|everybody|my (?:mum|mom|dad|grandma|grandmother|family))\s+"
                                r"(?:always\s+)?says?\s+(?:that\s+)?(?:you|u|it|if|a|an|the|there|[a-z]+s)\b"),
    ("a source says", r"(?:my|our|the|this|that)\s+(?:[a-z-]+\s+){0,2}?(?:book|guidebook|atlas|textbook|teacher|"
                      r"doctor|coach|trainer|app|article|blog|magazine|podcast|video|website|friend|guy|uncle|aunt|"
                      r"neighbou?r|grandma|grandpa|mum|mom|dad)(?:\s+(?:at|from|in|on)\s+(?:my|our|the)\s+[a-z-]+)?\s+"
                      r"(?:says|said|claims|claimed)\b"
                      # ... unless what follows is a directive to the speaker ("said no running", "says to rest",
                      # "said I shouldn't lift"): an instruction, not a claim about the world
                      r"(?!,?\s+(?:no|not to|to|I (?:should|shouldn't|must|mustn't|can't|cannot|need to|have to)|"
                      r"i (?:should|shouldn't|must|can't|need to|have to))\b)"),
    ("predicted of a thing", r"^(?:[A-Za-z]+ing\b[^,.;!?]{0,60}?|(?:it|that|this))(?:\s+is|'s)\s+(?:going to|gonna)"),
])


def relays_claim(sentence: str) -> bool:
    """True when ``sentence`` relays or predicts a claim about the world (see the module's doc).

    >>> relays_claim("I read that sloths sleep twenty hours a day."), relays_claim("I read a book on sloths.")
    (True, False)
    """
    return CLAIM.regex.search(sentence.replace("\u2019", "'").strip()) is not None
