"""Evaluation metrics, as pure functions over per-question numbers.

Retrieval (Appendix C.5 / D.4 of the EvoMemState paper). For question *i* with ``n_gold`` gold
evidence turns of which ``n_hit`` are in the final retrieved context:

- hit rate                = mean over questions of 1[n_hit >= 1]
- coverage                = mean of n_hit / n_gold
- complete retrieval rate = mean of 1[n_hit == n_gold]

A retrieved *fact* recovers a gold turn when the turn id is one of the fact's ``source_turn_ids``
(the dataset's own ids, e.g. LoCoMo ``D1:3``); a retrieved *turn* (baselines) recovers itself.
Context tokens are whitespace tokens of the rendered context, so facts and turns are counted alike.

Answers: LoCoMo token F1 with the LoCoMo normaliser (lower-case, drop commas and punctuation, drop
a/an/the/and, Porter stems; category 1 scores each comma-separated gold sub-answer against the best
prediction part; category 3 keeps the gold text before ';'; category 5 is right when the answer says
the thing was not mentioned), and Acc@complete = accuracy over the questions whose retrieval was
complete (D.4, Eq. 33). Confidence intervals: percentile bootstrap over questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from retrieval.render import whitespace_tokens as whitespace_tokens  # the one token count (the paper's figures)
from scoring.answers import token_f1


class EvidenceScore(BaseModel):
    """One question's evidence recovery; the three C.5 indicators derive from it."""

    model_config = ConfigDict(frozen=True)
    n_gold: int = Field(ge=1, description="Gold evidence turns that exist in the ingested history.")
    n_hit: int = Field(ge=0, description="Of those, how many are in the retrieved context.")

    @property
    def hit(self) -> bool:
        return self.n_hit >= 1

    @property
    def coverage(self) -> float:
        return self.n_hit / self.n_gold

    @property
    def complete(self) -> bool:
        return self.n_hit == self.n_gold


def score_evidence(gold: Iterable[str], retrieved_turn_ids: Iterable[str]) -> EvidenceScore:
    """Gold turn ids vs the turn ids the retrieved context carries (duplicates count once).

    >>> s = score_evidence(["D1:3", "D2:5"], ["D1:3", "D1:3", "D9:1"])
    >>> (s.n_gold, s.n_hit, s.hit, s.coverage, s.complete)
    (2, 1, True, 0.5, False)
    """
    g = set(gold)
    if not g:
        raise ValueError("a question without resolvable gold evidence cannot be scored for retrieval")
    return EvidenceScore(n_gold=len(g), n_hit=len(g & set(retrieved_turn_ids)))


def turns_of_facts(facts: Iterable[object]) -> list[str]:
    """The turn ids a list of retrieved facts carries, in order, each once (``fact.source_turn_ids``)."""
    out: dict[str, None] = {}
    for f in facts:
        for t in getattr(f, "source_turn_ids", ()):
            out.setdefault(t, None)
    return list(out)


# ----------------------------------------------------------------------------- aggregation
def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else None


def bootstrap_ci(values: Sequence[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean (questions resampled with replacement).

    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0 or n_boot <= 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (round(float(lo), 4), round(float(hi), 4))


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float], n_boot: int = 1000, alpha: float = 0.05,
                        seed: int = 0) -> tuple[float, float] | None:
    """CI of mean(a - b) with questions resampled jointly (a and b scored on the same questions)."""
    if len(a) != len(b):
        raise ValueError("paired bootstrap needs the same questions on both sides")
    return bootstrap_ci([x - y for x, y in zip(a, b)], n_boot, alpha, seed)


class RetrievalSummary(BaseModel):
    """One system's retrieval numbers over a set of questions (the issue's top-level fields)."""

    hit_rate: float
    coverage: float
    complete_retrieval_rate: float
    context_tokens_mean: float
    retrieval_p50_ms: float | None
    retrieval_p95_ms: float | None
    n_questions: int
    ci: dict[str, tuple[float, float] | None] = Field(
        default_factory=dict, description="95% percentile-bootstrap intervals of hit_rate, coverage, complete_retrieval_rate.")


def summarize(scores: Sequence[EvidenceScore], tokens: Sequence[int], latencies_ms: Sequence[float],
              n_boot: int = 1000, seed: int = 0) -> RetrievalSummary:
    if len(scores) != len(tokens):
        raise ValueError("one token count per scored question")
    hits = [float(s.hit) for s in scores]
    cov = [s.coverage for s in scores]
    comp = [float(s.complete) for s in scores]
    n = len(scores)

    def mean(xs: Sequence[float]) -> float:
        return round(sum(xs) / n, 4) if n else 0.0

    return RetrievalSummary(
        hit_rate=mean(hits), coverage=mean(cov), complete_retrieval_rate=mean(comp),
        context_tokens_mean=round(sum(tokens) / n, 1) if n else 0.0,
        retrieval_p50_ms=_r(percentile(latencies_ms, 50)), retrieval_p95_ms=_r(percentile(latencies_ms, 95)),
        n_questions=n,
        ci={"hit_rate": bootstrap_ci(hits, n_boot, seed=seed), "coverage": bootstrap_ci(cov, n_boot, seed=seed),
            "complete_retrieval_rate": bootstrap_ci(comp, n_boot, seed=seed)})


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


# ----------------------------------------------------------------------------- LoCoMo answer F1
def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1 (multi-hop): mean over comma-separated gold parts of the best F1 of any prediction part."""
    preds = [x.strip() for x in prediction.split(",")] or [prediction]
    golds = [x.strip() for x in gold.split(",")] or [gold]
    return float(np.mean([max(token_f1(p, g) for p in preds) for g in golds]))


_NOT_MENTIONED = ("not mentioned", "no information available")


def locomo_f1(prediction: str, gold: str | None, category: int) -> float:
    """The LoCoMo QA score of one answer, by numeric category.

    >>> locomo_f1("Not mentioned in the conversation", None, 5)
    1.0
    >>> locomo_f1("Paris; maybe Rome", "Paris; Rome", 3) == token_f1("Paris; maybe Rome", "Paris")
    True
    """
    if category == 5:
        return 1.0 if any(m in prediction.lower() for m in _NOT_MENTIONED) else 0.0
    if gold is None:
        raise ValueError(f"category {category} question without a gold answer")
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold)
    return token_f1(prediction, gold)


def acc_at_complete(correct: Sequence[bool | None], complete: Sequence[bool]) -> tuple[float | None, int]:
    """Accuracy over questions with complete retrieval (D.4 Eq. 33); unjudged answers (None) are left out.

    >>> acc_at_complete([True, False, True, None], [True, True, False, True])
    (0.5, 2)
    """
    pairs = [c for c, ok in zip(correct, complete) if ok and c is not None]
    return (round(sum(pairs) / len(pairs), 4) if pairs else None), len(pairs)
