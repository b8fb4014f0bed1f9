"""A small Okapi BM25 (k1 1.2, b 0.75, lower-cased ``\\w+`` tokens) for stores without a text index."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+")

# Function words carry no topical signal and dominate short queries ("what did I say about...").
STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i if in is it its me my "
    "of on or our she so that the their them they this to was we were what when where which who why will "
    "with you your".split()
)


def tokenize(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class BM25:
    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tfs = [Counter(tokenize(d)) for d in docs]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = (sum(self.lens) / len(self.lens)) if self.lens else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def scores(self, query: str) -> list[float]:
        q = [w for w in tokenize(query) if w in self.idf]
        out = []
        for tf, ln in zip(self.tfs, self.lens):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * ln / self.avg) if self.avg else self.k1
            for w in q:
                f = tf.get(w, 0)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        sc = self.scores(query)
        idx = sorted((i for i, s in enumerate(sc) if s > 0), key=lambda i: -sc[i])[:k]
        return [(i, sc[i]) for i in idx]
