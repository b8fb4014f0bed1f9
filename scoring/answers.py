"""Scoring an answer against a reference: LoCoMo's normalisation and (stemmed) token F1, exact and
multiple-choice match. Pure functions, used by the policy rewards and by evaluation alike."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

# The LoCoMo scorer stems with NLTK's Porter stemmer (its default NLTK_EXTENSIONS mode); so does BM25: one stemmer.
from graph.bm25 import stem

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """LoCoMo's answer normaliser (before stemming).

    >>> normalize_answer("The Beach, and a Museum!")
    'beach museum'
    """
    s = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _tokens(text: str) -> list[str]:
    return [stem(w) for w in normalize_answer(text).split()]


def answer_recall(context: str, gold: str) -> float | None:
    """The share of the gold answer's distinct tokens (LoCoMo normalisation, Porter stems) that the
    context contains; None for an answer with no tokens. A judge-free check that a context carries
    what the answer needs, not only which turns it came from: shortening lines raises the turn metrics
    and lowers this (docs/results/retrieval-routes.md, session 15).

    >>> answer_recall("[F1] Caroline went to the LGBTQ support group on 7 May", "7 May 2023")
    0.6667
    >>> answer_recall("anything", "the") is None
    True
    """
    g = set(_tokens(gold))
    if not g:
        return None
    return round(len(g & set(_tokens(context))) / len(g), 4)


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 after LoCoMo normalisation and Porter stemming: the LoCoMo-official score, and
    the one every caller uses (benchmarks, policy rewards). Stemming makes "runs" and "running" match.

    >>> round(token_f1("went hiking in the mountains", "hiking mountains"), 3)
    0.667
    """
    p, g = _tokens(prediction), _tokens(gold)
    same = sum((Counter(p) & Counter(g)).values())
    if not same:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal.

    >>> exact_match("The Beach.", "beach"), exact_match("beach trip", "beach")
    (1.0, 0.0)
    """
    return float(normalize_answer(prediction) == normalize_answer(reference))


def choice_match(prediction: str, reference: str, choices: Sequence[str]) -> float:
    """1.0 when the prediction picks the reference option — by its text or by its letter "(B)"/"B".

    >>> choice_match("(B)", "hiking", ["beach", "hiking"]), choice_match("beach", "hiking", ["beach", "hiking"])
    (1.0, 0.0)
    """
    pred = prediction.strip()
    m = re.fullmatch(r"\(?([A-Za-z])\)?[.:]?", pred)
    if m and len(choices) <= 26:
        idx = ord(m.group(1).upper()) - 65
        return float(0 <= idx < len(choices) and choices[idx] == reference)
    norm = normalize_answer(pred)
    hits = [c for c in choices if normalize_answer(c) == norm]
    if not hits:  # an answer that quotes the option inside a sentence still counts, if only one option fits
        hits = [c for c in choices if normalize_answer(c) and normalize_answer(c) in norm]
    return float(len(hits) == 1 and hits[0] == reference)
