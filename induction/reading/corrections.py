"""Does a line say it corrects, or report evidence? The assistant disputes a person's belief only when it says
so ("Actually, …", "that's a common myth", "studies show …"); its other lines are advice and explanations
written for the person, not independent evidence."""

from __future__ import annotations

from induction.reading.cues import CueSet

CORRECTION = CueSet("correction", [
    # "Actually, the museum closes at five", "in fact it rained"
    ("correcting adverb", r"actually|in fact|in reality|contrary to"),
    # "that's a common myth", "a popular misconception"
    ("myth", r"(?:common |popular |widespread )?(?:misconception|myth)s?"),
    # "that isn't quite true", "is not the case"
    ("negated truth", r"(?:isn't|aren't|wasn't|weren't|is not|are not|was not|were not|not) "
                      r"(?:quite |entirely |actually |really )?(?:true|accurate|correct|right|the case)"),
    # "that figure is outdated", "the claim was false"
    ("stated falsity", r"(?:is|are|was|were|'s) (?:actually |in fact )?(?:false|incorrect|inaccurate|wrong|"
                       r"misleading|outdated|a myth|a misconception)"),
    # "studies show", "tests found", "no evidence"
    ("reported evidence", r"(?:research|studies|study|evidence|data|tests?|trials?|benchmarks?|reviews?|"
                          r"evaluations?|experiments?|surveys?) (?:shows?|showed|suggests?|suggested|indicates?|"
                          r"indicated|found|finds|demonstrates?|demonstrated|contradicts?)|no (?:scientific )?evidence"),
    # "it was debunked"
    ("debunking", r"debunked"),
    # "according to the council's website" (not "according to you(r) …")
    ("attribution", r"according to (?!your?\b)"),
])


def corrects(statement: str) -> bool:
    """Does the line say it corrects or reports evidence ("Actually, …", "a common myth", "that's not accurate",
    "studies show", "according to the 2024 review")? What the assistant may dispute a person with.

    >>> corrects("assistant: Actually, the Great Wall is not visible from space."), corrects("Studies show X.")
    (True, True)
    >>> corrects("assistant: Scenario: You and Stephen are considering moving."), corrects("According to your report, …")
    (False, False)
    """
    return bool(CORRECTION.regex.search(statement))
