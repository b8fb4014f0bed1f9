"""Append-only vectors and BM25 for the route index: one version extends another without a rebuild.

A route index version reads the first ``n`` rows of buffers it shares with the versions built on it
(``Grow``): extending appends rows past ``n``, so an older version still being read by a request sees
exactly its own rows. ``TextIndex`` is Okapi BM25 (graph/bm25.py's k1, b, terms) whose document
frequencies and average length are taken at query time from the postings below ``n``, so its scores
are bit-identical to ``graph.bm25.BM25`` over the same documents, and adding a session's documents
costs that session's words, not the user's history.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence, ValuesView

import numpy as np

from graph.bm25 import terms


class Grow:
    """An append-only array (capacity doubles); ``view(n)`` is its first ``n`` rows. One writer at a time;
    readers of an older length are never disturbed (rows are only ever written past every reader's n)."""

    def __init__(self, first: np.ndarray) -> None:
        self.buf, self.n = np.array(first), len(first)

    @classmethod
    def wrap(cls, first: np.ndarray) -> Grow:
        """A Grow over ``first`` itself, not a copy (it may be a view of a larger array: ``first`` is full,
        so the first append moves to a buffer of its own and never writes past it)."""
        g = cls.__new__(cls)
        g.buf, g.n = first, len(first)
        return g

    def append(self, rows: np.ndarray) -> None:
        k, n = len(rows), self.n
        buf = self.buf
        if n + k > len(buf):
            new = np.empty((max(2 * len(buf), n + k, 16), *buf.shape[1:]), dtype=buf.dtype)
            new[:n] = buf[:n]
            buf = new
        buf[n:n + k] = rows
        self.buf = buf  # the buffer first, then the length: a reader that sees the length sees the rows
        self.n = n + k

    def view(self, n: int | None = None) -> np.ndarray:
        ln = self.n if n is None else n
        out: np.ndarray = self.buf[:ln]
        return out


class _Idf(Mapping[str, float]):
    """The IDF of every indexed term at one version, computed on lookup."""

    def __init__(self, ix: TextIndex) -> None:
        self.ix = ix
        self._all: dict[str, float] | None = None

    def __getitem__(self, w: str) -> float:
        c = self.ix.df(w)
        if not c:
            raise KeyError(w)
        return math.log(1 + (self.ix.n - c + 0.5) / (c + 0.5))

    def _every(self) -> dict[str, float]:
        # every term at once (information_of reads the largest IDF): computed once per version
        if self._all is None:
            self._all = {w: self[w] for w in list(self.ix.post) if self.ix.df(w)}
        return self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())

    def values(self) -> ValuesView[float]:
        return self._every().values()


class TextIndex:
    """BM25 over documents 0..n-1 (k1 1.2, b 0.75, Porter-stemmed ``terms``), extendable by ``extend``."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75, stemmed: bool = True) -> None:
        self.k1, self.b, self.stemmed = k1, b, stemmed
        self.n, self.total = 0, 0
        self.lens = Grow(np.zeros(0, dtype=np.int64))
        self.post: dict[str, tuple[Grow, Grow]] = {}  # term -> (doc rows, term frequencies), rows ascending
        self._head = [0]  # documents in the shared buffers: only the version holding all of them may extend
        self._add(docs)
        self.idf: Mapping[str, float] = _Idf(self)

    def _add(self, docs: Sequence[str]) -> None:
        # every (term, doc, frequency) of the new documents in one pass, then one stable sort by term:
        # each term's new postings are a slice (docs ascending), not a list grown term by term
        vocab: dict[str, int] = {}
        tids: list[int] = []
        rows: list[int] = []
        freqs: list[int] = []
        lens = np.zeros(len(docs), dtype=np.int64)
        for k, doc in enumerate(docs):
            words = terms(doc, self.stemmed)
            lens[k] = len(words)
            row = self.n + k
            for w, f in Counter(words).items():
                t = vocab.get(w)
                if t is None:
                    t = vocab[w] = len(vocab)
                tids.append(t)
                rows.append(row)
                freqs.append(f)
        if tids:
            by = np.asarray(tids, dtype=np.int64)
            order = np.argsort(by, kind="stable")
            d_all = np.asarray(rows, dtype=np.int64)[order]
            c_all = np.asarray(freqs, dtype=np.int64)[order]
            ends = np.cumsum(np.bincount(by, minlength=len(vocab))).tolist()
            start = 0
            for w, t in vocab.items():  # term ids follow first appearance, as ``ends`` does
                end = ends[t]
                d, c = d_all[start:end], c_all[start:end]
                start = end
                got = self.post.get(w)
                if got is None:
                    self.post[w] = (Grow.wrap(d), Grow.wrap(c))
                else:
                    got[0].append(d)
                    got[1].append(c)
        self.lens.append(lens)
        self.n += len(docs)
        self.total += int(lens.sum())
        self._head[0] = self.n

    def newest(self) -> bool:
        """Whether this is the version its shared buffers end at (only that one can be extended)."""
        return self._head[0] == self.n

    def extend(self, docs: Sequence[str]) -> TextIndex | None:
        """A new version with ``docs`` appended (rows n, n+1, ...); None when this version is not the
        newest one built on its buffers (then the caller rebuilds)."""
        if not self.newest():
            return None
        new = TextIndex.__new__(TextIndex)
        new.__dict__.update(self.__dict__)
        new.post = dict(self.post)  # a new term's postings are not this version's
        new.idf = _Idf(new)
        new._add(docs)
        return new

    def _postings(self, w: str) -> tuple[np.ndarray, np.ndarray] | None:
        got = self.post.get(w)
        if got is None:
            return None
        docs = got[0].view()
        k = int(np.searchsorted(docs, self.n))
        return (docs[:k], got[1].view(k)) if k else None

    def df(self, w: str) -> int:
        p = self._postings(w)
        return 0 if p is None else len(p[0])

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of the documents sharing a word with ``query``, rows ascending; each distinct
        query word counts once (as ``BM25.sparse_scores``, to the bit)."""
        acc: np.ndarray | None = None
        hit: np.ndarray | None = None
        n, k1, b = self.n, self.k1, self.b
        avg = self.total / n if n else 0.0
        lens = self.lens.view(n)
        for w in dict.fromkeys(terms(query, self.stemmed)):
            p = self._postings(w)
            if p is None:
                continue
            docs, f = p
            c = len(docs)
            idf = math.log(1 + (n - c + 0.5) / (c + 0.5))
            norm = k1 * (1 - b + b * lens[docs] / avg) if avg else np.full(len(docs), k1)
            if acc is None or hit is None:
                acc, hit = np.zeros(n), np.zeros(n, dtype=bool)
            acc[docs] += idf * f * (k1 + 1) / (f + norm)
            hit[docs] = True
        if acc is None or hit is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        rows = np.flatnonzero(hit)
        return rows, acc[rows]

    def sparse_scores(self, query: str) -> dict[int, float]:
        rows, sc = self.scores(query)
        return dict(zip(rows.tolist(), sc.tolist()))
