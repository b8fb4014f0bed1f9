"""A fast, deterministic "answer reader": the frozen answer model for CPU training and tests.

It stands in for the LLM personal agent of the paper (Qwen3-8B there) so that the whole GRPO loop —
sample states, answer with each, score, compare with the no-state answer — runs in milliseconds on a
CPU, and so that learning can be *shown*: a good Reasoning State measurably changes its answers.

How it reads, on purpose simple and documented so nobody mistakes it for a language model:
- Each fact votes for each answer option in proportion to the option's content words it shares
  (``support``): a fact that mentions "beach holidays" supports "a relaxing beach holiday".
- Without a Reasoning State every fact weighs 1 — the naive agent that lets whatever is mentioned
  most often win (a superseded preference repeated twice beats the current one said once).
- With a state, a fact marked ``ignore`` (or role ``irrelevant``) weighs 0 and a used fact weighs by
  priority (high 3, medium 2, low 1). Facts the state does not name weigh 0 too: a Reasoning State
  is read as the complete list of what to rely on, so pointing at the one fact that matters is a
  valid (and short) state. Rules are not read: a rule could smuggle the answer in, and the reader
  must reward memory-use decisions only.
- The best-supported option wins. Ties are broken by the no-state scores (then by option order), and
  a state under which no option gets any support (say, every fact ignored) gives the no-state answer:
  a state earns credit only by making the right option win outright, never by turning the naive
  answer into a coin flip.
- ``ignored_weight`` (reader-v2, 0 in reader-v1): a fact the state marks ``ignore`` also counts
  *against* the options it supports, with this weight. Real retrieval (training_data/retrieved.py)
  rarely brings back the fact that supports the right option — the outside evidence of a MemSyco
  conflict row is not among the user's memories — so "this memory must not drive the answer" has to
  be able to move the answer by itself: the option the misleading memory supports loses. Ignoring
  *every* fact is no shortcut: where the memory-supported option is right (personalised use, a current
  preference over a superseded one) it loses too, so the state must decide fact by fact.
- Open questions (no options): the answer is the text of the highest-weighted facts, which a token-F1
  scorer can compare with the reference. Weak, but deterministic and state-sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval.retrieve import EvidenceItem
from policy.state import ReasoningState

STOPWORDS = frozenset(
    "a an the and or of in on at to for with by from as is are was were be been it its this that these those "
    "their them they he she his her my me i you your we our us user user's about very really just only yes no "
    "not can will would should could do does did has have had into than then so if but also all any some"
    .split()) - {"only", "all"}  # "only"/"all" carry meaning in some answers ("only ten percent", "all of it")
PRIORITY_WEIGHT = {"high": 3.0, "medium": 2.0, "low": 1.0}
_WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A crude plural stripper, enough to match "holidays" with "holiday".

    >>> [stem(w) for w in ["holidays", "classes", "comedies", "smartwatches", "bus", "mixes"]]
    ['holiday', 'class', 'comedy', 'smartwatch', 'bus', 'mix']
    """
    if len(word) <= 3:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> frozenset[str]:
    """Lower-cased, stemmed words minus stopwords.

    >>> sorted(content_words("The user loves relaxing beach holidays."))
    ['beach', 'holiday', 'love', 'relaxing']
    """
    return frozenset(stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def support(fact_text: str, option: str) -> float:
    """Share of the option's content words that the fact mentions (0..1).

    >>> support("The user now prefers relaxing beach holidays.", "a relaxing beach holiday")
    1.0
    >>> support("The user loves hiking mountain trails.", "a relaxing beach holiday")
    0.0
    """
    ow = content_words(option)
    return len(ow & content_words(fact_text)) / len(ow) if ow else 0.0


def fact_weights(items: Sequence[EvidenceItem], state: ReasoningState | None,
                 unmentioned: float = 0.0) -> dict[str, float]:
    """Weight per alias: 1 without a state; with one, ignore/irrelevant → 0, use → priority weight,
    not named → ``unmentioned``."""
    if state is None:
        return {it.alias: 1.0 for it in items}
    weights = {it.alias: unmentioned for it in items}
    for f in state.facts:
        if f.alias in weights:
            weights[f.alias] = 0.0 if (not f.use or f.role == "irrelevant") else PRIORITY_WEIGHT[f.priority]
    return weights


class AnswerReader:
    """The deterministic answer model: ``answer(request, items, choices, state) -> str``."""

    def __init__(self, ignored_weight: float = 0.0):
        self.ignored_weight = ignored_weight
        self.name = "reader-v1" if ignored_weight == 0 else f"reader-v2-ignored{ignored_weight:g}"

    def option_scores(self, items: Sequence[EvidenceItem], choices: Sequence[str],
                      state: ReasoningState | None) -> list[float]:
        w = fact_weights(items, state)
        if state is not None and self.ignored_weight:
            ignored = {f.alias for f in state.facts if not f.use or f.role == "irrelevant"}
            w = {a: -self.ignored_weight if a in ignored else v for a, v in w.items()}
        return [sum(w[it.alias] * support(it.fact.statement, opt) for it in items) for opt in choices]

    def answer(self, request: str, items: Sequence[EvidenceItem], choices: Sequence[str] | None,
               state: ReasoningState | None = None) -> str:
        if choices:
            naive = self.option_scores(items, choices, None)
            scores = self.option_scores(items, choices, state) if state is not None else naive
            if all(v == 0 for v in scores):
                scores = naive  # the state left nothing to go on: answer as without it
            best = max(scores)
            tied = [k for k, v in enumerate(scores) if v == best]
            return choices[max(tied, key=lambda k: (naive[k], -k))]  # tie: the no-state favourite, then order
        w = fact_weights(items, state)  # open questions: ignored facts are simply left out
        if not items:
            return "I don't know."
        top = max(w.values())
        if top <= 0:
            return "I don't know."
        return " ".join(it.fact.statement for it in items if w[it.alias] == top)
