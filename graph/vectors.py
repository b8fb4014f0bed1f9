"""Top-k by cosine with a deterministic order, shared by both backends' ``vector_search``.

Equal similarities are common (identical statements, a hashing embedder) and ``argpartition`` orders
them by their row, which depends on how a backend happens to return a user's facts; ties are
broken by fact id instead, so the same memory gives the same seeds on either backend (a migrated
memory retrieves exactly as before, tests/test_portable.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def top_k(sims: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` highest ``sims`` as (id, similarity), highest first, ties by id.

    >>> top_k(np.array([0.5, 0.9, 0.5]), ["c", "a", "b"], 2)
    [('a', 0.9), ('b', 0.5)]
    """
    k = min(k, len(sims))
    if k <= 0:
        return []
    kth = -np.partition(-sims, k - 1)[k - 1]  # the k-th largest similarity
    cand = np.nonzero(sims >= kth)[0]  # every row tied with it comes along, then the order decides
    order = sorted(cand.tolist(), key=lambda i: (-float(sims[i]), ids[i]))[:k]
    return [(ids[i], float(sims[i])) for i in order]
