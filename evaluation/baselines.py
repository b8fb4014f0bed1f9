"""Turn-level baselines, run in the same pass as the memory system over the same ingested history.

One record per dialogue turn, written ``"<speaker>: <text>"`` (LoCoMo turn texts already carry
``[image: <caption>]`` from the adapter). The index grows session by session exactly as the memory
does, so a baseline never sees a turn the memory has not been given (no future leakage).

- ``naive_rag``: dense retrieval (NaiveRAG) with the memory's own embedder (normalized, cosine), top K.
- ``bm25``: Okapi BM25 (k1 1.2, b 0.75) over lower-cased ``\\w+`` tokens *without* stop-word removal
  (graph/bm25.py drops stop words for fact search; the turn baseline follows the published setup).
- ``rrf``: reciprocal-rank fusion (k = 60) of the full dense and BM25 rankings, top K.
- ``naive_rag_budget``: dense ranking filled turn by turn up to a token budget (the memory's context
  budget), the fair "same tokens" comparison; a turn that does not fit is skipped, later ones may fit.
- ``full_context``: every ingested turn (token count; answers when a model is configured).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evaluation.metrics import whitespace_tokens
from llmclients.embeddings import Embedder

BaselineName = Literal["naive_rag", "bm25", "rrf", "naive_rag_budget", "full_context"]
BASELINES: tuple[BaselineName, ...] = ("naive_rag", "bm25", "rrf", "naive_rag_budget", "full_context")
_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens, stop words kept.

    >>> bm25_tokens("I'm at the Beach!")
    ['i', 'm', 'at', 'the', 'beach']
    """
    return _WORD.findall(text.lower())


class TurnBM25:
    """Okapi BM25 over turn records; idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative)."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tfs = [Counter(bm25_tokens(d)) for d in docs]
        lens = np.asarray([sum(tf.values()) for tf in self.tfs], dtype=float)
        avg = float(lens.mean()) if len(lens) else 0.0
        self.norm = k1 * (1 - b + b * lens / avg) if avg else np.full(len(lens), k1)
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, tf in enumerate(self.tfs):
            for w, f in tf.items():
                self.postings.setdefault(w, []).append((i, f))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tfs))
        for w in bm25_tokens(query):  # a repeated query word counts each time (bag-of-words query)
            for i, f in self.postings.get(w, ()):
                out[i] += self.idf[w] * f * (self.k1 + 1) / (f + self.norm[i])
        return out


def rrf_ranking(rankings: Sequence[Sequence[int]], rrf_k: int = 60) -> list[int]:
    """Indices by fused score sum(1 / (rrf_k + rank)), rank from 1; ties by index.

    >>> rrf_ranking([[0, 1, 2], [2, 1, 0]])  # 1/61 + 1/63 > 2/62: a top rank beats two middle ones
    [0, 2, 1]
    """
    score: dict[int, float] = {}
    for ranking in rankings:
        for r, i in enumerate(ranking, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (rrf_k + r)
    return sorted(score, key=lambda i: (-score[i], i))


class TurnHit(BaseModel):
    """What a baseline put in the context for one question."""

    model_config = ConfigDict(frozen=True)
    turn_ids: tuple[str, ...]
    tokens: int
    latency_ms: float = Field(description="Search time plus the query embedding time (dense and fused rankings).")


class TurnIndex:
    """The growing per-conversation turn store the baselines search."""

    def __init__(self, embedder: Embedder, rrf_k: int = 60, k1: float = 1.2, b: float = 0.75):
        self.embedder, self.rrf_k, self.k1, self.b = embedder, rrf_k, k1, b
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.tokens: list[int] = []
        self._vecs: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._bm25: TurnBM25 | None = None

    def add(self, turns: Sequence[tuple[str, str, str]]) -> None:
        """``(turn_id, speaker, text)`` triples of one ingested session."""
        if not turns:
            return
        recs = [f"{speaker}: {text}" for _, speaker, text in turns]
        self.ids += [t for t, _, _ in turns]
        self.texts += recs
        self.tokens += [whitespace_tokens(r) for r in recs]
        self._vecs.append(np.asarray(self.embedder.embed(recs), dtype=np.float32))
        self._matrix, self._bm25 = None, None

    def __len__(self) -> int:
        return len(self.ids)

    def _mat(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.concatenate(self._vecs) if self._vecs else np.zeros((0, self.embedder.dim), np.float32)
        return self._matrix

    def dense_ranking(self, qvec: np.ndarray) -> list[int]:
        sims = self._mat() @ np.asarray(qvec, dtype=np.float32)
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    def bm25_ranking(self, query: str) -> list[int]:
        if self._bm25 is None:
            self._bm25 = TurnBM25(self.texts, self.k1, self.b)
        sc = self._bm25.scores(query)
        # Turns sharing no word with the query have no BM25 evidence at all: they are not ranked.
        return [int(i) for i in np.argsort(-sc, kind="stable") if sc[i] > 0]

    def _hit(self, idx: Sequence[int], t0: float, extra_ms: float) -> TurnHit:
        return TurnHit(turn_ids=tuple(self.ids[i] for i in idx), tokens=sum(self.tokens[i] for i in idx),
                       latency_ms=(time.perf_counter() - t0) * 1e3 + extra_ms)

    def search(self, name: BaselineName, query: str, qvec: np.ndarray, k: int, budget: int | None = None,
               embed_ms: float = 0.0) -> TurnHit:
        t0 = time.perf_counter()
        if name == "naive_rag":
            return self._hit(self.dense_ranking(qvec)[:k], t0, embed_ms)
        if name == "bm25":
            return self._hit(self.bm25_ranking(query)[:k], t0, 0.0)
        if name == "rrf":
            return self._hit(rrf_ranking([self.dense_ranking(qvec), self.bm25_ranking(query)], self.rrf_k)[:k], t0, embed_ms)
        if name == "naive_rag_budget":
            if budget is None:
                raise ValueError("naive_rag_budget needs a token budget")
            picked, used, smallest = [], 0, min(self.tokens, default=1)
            for i in self.dense_ranking(qvec):
                if used + self.tokens[i] <= budget:
                    picked.append(i)
                    used += self.tokens[i]
                if budget - used < smallest:
                    break
            return self._hit(picked, t0, embed_ms)
        if name == "full_context":
            return self._hit(range(len(self.ids)), t0, 0.0)
        raise ValueError(f"unknown baseline {name!r}")

    def context(self, turn_ids: Sequence[str]) -> str:
        """The baseline's context text for an answer model (turns in the order retrieved)."""
        pos = {t: i for i, t in enumerate(self.ids)}
        return "\n".join(self.texts[pos[t]] for t in turn_ids)
