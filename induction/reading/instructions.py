"""Instructions: a step of advice ("Use a thicker pan", "Check the tyre pressure"), which claims nothing about
the world, and a person's standing instruction about how to answer later requests (the retrieval route's own
reading, ``retrieval.seeds.instruction``, re-exported here)."""

from __future__ import annotations

from retrieval.seeds.instruction import STANDING_CLASSES, standing_instruction
from induction.reading.cues import CueSet

__all__ = ["INSTRUCTION", "STANDING_CLASSES", "instructs", "standing_instruction"]

# An instruction or a step of advice. An optional speaker prefix ("assistant: ") and a short "Heading:" label
# ("Data in Transit: ") come first, then an optional adverb, then an imperative verb. A finite verb one or two
# words on ("Research shows…", "Test coverage is…") makes the first word a noun, not an imperative.
INSTRUCTION = CueSet("instruction", [
    ("imperative verb", r"use|utilize|include|check|ensure|make|add|set|create|consider|try|avoid|keep|dedicate|join|"
                        r"get|provide|define|share|install|run|write|review|schedule|follow|start|implement|focus|"
                        r"prioriti[sz]e|reach out|ask|allocate|break|track|monitor|limit|update|test|verify|store|"
                        r"handle|apply|configure|document|encourage|establish|identify|integrate|leverage|maintain|"
                        r"offer|organi[sz]e|prepare|remember|replace|seek|select|send|take|explore|engage|develop|"
                        r"communicate|collaborate|celebrate|choose|compare|contact|continue|deploy|design|discuss|"
                        r"don't|do not|never|stay|give|let's|go|look|find|import|call|wrap|move|navigate|enable|"
                        r"disable|refactor|catch|validate|sanitize|hash|encrypt|aim|balance|build|capture|clarify|"
                        r"conduct|connect|customi[sz]e|draft|evaluate|gather|highlight|incorporate|invite|list|note|"
                        r"outline|pay|simplify|spend|structure|summari[sz]e|inform|arrange|assign|assess|participate|"
                        r"attend|visit|practice|plan|research|log"),
], head=r"^(?:[\w.'-]{1,30}:\s+)?(?:(?:[A-Z0-9][\w/&'().-]*\s+){0,5}[\w/&'().-]+:\s+)?"
        r"(?:please\s+|always\s+|also\s+|then\s+|first,?\s+|next,?\s+|finally,?\s+|regularly\s+)?(?:",
   tail=r")\b(?!(?:\s+[\w%-]+)?\s+(?:is|are|was|were|has|have|had|shows?|showed|found|finds|suggests?|indicates?|"
        r"remains?|can|could|will|would|may|might|must|should|seems?|appears?|tends?)\b)")


def instructs(statement: str) -> bool:
    """True for an instruction or a step of advice, which states no claim that could dispute a belief.

    >>> instructs("assistant: Data in Transit: Use TLS/SSL encryption."), instructs("Check if the response is ok.")
    (True, True)
    >>> instructs("assistant: Research shows remote teams are less productive."), instructs("Model Boreal was faster.")
    (False, False)
    """
    return bool(INSTRUCTION.regex.match(statement.strip()))
