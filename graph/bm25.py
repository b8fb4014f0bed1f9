"""A small Okapi BM25 (k1 1.2, b 0.75, lower-cased ``\\w+`` tokens) for stores without a text index."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from graph.porter import stem as _porter_stem

_WORD = re.compile(r"\w+")

# Function words carry no topical signal and dominate short queries ("what did I say about...").
STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i if in is it its me my "
    "of on or our she so that the their them they this to was we were what when where which who why will "
    "with you your".split()
)


def tokenize(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Porter stem as NLTK's ``PorterStemmer()`` gives it (the LoCoMo scorer's), from the vendored copy
    in graph/porter.py (importing nltk's package costs seconds: scipy, scikit-learn): "started"/"starting"
    -> "start", "paintings" -> "paint"."""
    return _porter_stem(word)


def terms(text: str, stemmed: bool = True) -> list[str]:
    """What BM25 indexes and matches: ``tokenize``'s words, Porter-stemmed unless ``stemmed`` is off."""
    return [stem(w) for w in tokenize(text)] if stemmed else tokenize(text)


class BM25:
    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75, stemmed: bool = True):
        self.k1, self.b, self.stemmed = k1, b, stemmed
        self.tfs = [Counter(terms(d, stemmed)) for d in docs]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = (sum(self.lens) / len(self.lens)) if self.lens else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        # Postings: a query touches only the documents that hold its words (retrieval runs per request).
        self.norm = [self.k1 * (1 - self.b + self.b * ln / self.avg) if self.avg else self.k1 for ln in self.lens]
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, tf in enumerate(self.tfs):
            for w, f in tf.items():
                self.postings.setdefault(w, []).append((i, f))

    def sparse_scores(self, query: str) -> dict[int, float]:
        """Non-zero scores only, by document index; each distinct query word counts once."""
        out: dict[int, float] = {}
        for w in dict.fromkeys(terms(query, self.stemmed)):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i, f in self.postings[w]:
                out[i] = out.get(i, 0.0) + idf * f * (self.k1 + 1) / (f + self.norm[i])
        return out

    def scores(self, query: str) -> list[float]:
        out = [0.0] * len(self.tfs)
        for i, s in self.sparse_scores(query).items():
            out[i] = s
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        sc = self.sparse_scores(query)
        idx = sorted((i for i, s in sc.items() if s > 0), key=lambda i: (-sc[i], i))[:k]
        return [(i, sc[i]) for i in idx]
