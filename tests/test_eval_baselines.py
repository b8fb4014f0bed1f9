"""Turn baselines: BM25 (published setup, stop words kept), RRF, dense, budget filling, growing index."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.baselines import TurnBM25, TurnIndex, bm25_tokens, rrf_ranking
from llmclients.embeddings import HashEmbedder


def test_bm25_by_hand() -> None:
    docs = ["the cat sat", "the dog", "cat cat cat on the mat today"]
    bm = TurnBM25(docs)
    assert bm25_tokens("The Cat's mat!") == ["the", "cat", "s", "mat"]  # stop words are kept
    # idf(cat): N=3, df=2 -> ln(1 + (3-2+.5)/(2+.5)) = ln(1.6)
    idf = math.log(1 + 1.5 / 2.5)
    avg = (3 + 2 + 7) / 3
    norm0 = 1.2 * (1 - 0.75 + 0.75 * 3 / avg)
    expected0 = idf * 1 * 2.2 / (1 + norm0)
    s = bm.scores("cat")
    assert s[0] == pytest.approx(expected0) and s[1] == 0.0 and s[2] > s[0]
    # a repeated query word counts twice (bag-of-words query)
    assert bm.scores("cat cat")[0] == pytest.approx(2 * expected0)
    # "the" is in every doc, so its idf is small but not zero: stop words still rank
    assert bm.scores("the")[1] > 0


def test_rrf_by_hand() -> None:
    # a: ranks 1 and 3 -> 1/61 + 1/63 = 0.032266; b: 2 and 2 -> 2/62 = 0.032258; c: same as a.
    # a and c tie (order by id), b just below: one top rank outweighs two middle ones.
    assert rrf_ranking([["a", "b", "c"], ["c", "b", "a"]], 60) == ["a", "c", "b"]  # type: ignore[list-item]
    assert 1 / 61 + 1 / 63 > 2 / 62
    # a document missing from one list still gets the other list's share
    assert rrf_ranking([["x"], ["y", "x"]], 60) == ["x", "y"]  # type: ignore[list-item]


def test_index_search_and_budget() -> None:
    emb = HashEmbedder(64)
    idx = TurnIndex(emb)
    idx.add([("t1", "Ann", "I love hiking in the Alps"), ("t2", "Bob", "My dog is called Rex")])
    assert len(idx) == 2 and idx.tokens == [7, 6]
    q = "Bob: My dog is called Rex"
    qv = emb.embed([q])[0]
    assert idx.search("naive_rag", q, qv, k=1).turn_ids == ("t2",)
    assert idx.search("bm25", q, qv, k=5).turn_ids[0] == "t2"
    assert idx.search("rrf", q, qv, k=1).turn_ids == ("t2",)
    full = idx.search("full_context", q, qv, k=1)
    assert full.turn_ids == ("t1", "t2") and full.tokens == 13
    # budget 6: t2 (6 tokens) fits, then nothing else does
    b = idx.search("naive_rag_budget", q, qv, k=1, budget=6)
    assert b.turn_ids == ("t2",) and b.tokens == 6
    with pytest.raises(ValueError):
        idx.search("naive_rag_budget", q, qv, k=1)
    # the index grows with each ingested session and search sees the new turns
    idx.add([("t3", "Ann", "Rex the dog bit my hiking boot")])
    assert len(idx.search("full_context", q, qv, k=1).turn_ids) == 3
    assert "Ann: Rex the dog bit my hiking boot" in idx.context(["t3", "t1"]).splitlines()[0]
    assert np.isfinite(b.latency_ms)
