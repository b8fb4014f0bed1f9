"""The concept route's view of the live concept tree: each concept's member rows and centroid.

Ingestion keeps the tree (induction/ontology.py: facts ATTACHed to the nearest concept, CREATE, MERGE
and SPLIT in the commit path, stored as ``PARENT_OF`` / ``CONTAINS``). The route index reads it as it
is stored: a concept that directly CONTAINS at least ``MIN_MEMBERS`` facts is a route target, and its
centroid is the mean of its members' retrieval vectors. Nothing is induced at read time, so the
concepts a request lands in are the ones ``evomem concepts`` shows, and an index extended by a
commit's ChangeSet (retrieval/seeds/delta.py) holds exactly what a rebuild holds: only the concepts
whose membership the commit changed are recomputed, members are summed in fact-id order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# A concept with one direct member is that fact: the fact routes already rank it.
MIN_MEMBERS = 2


def concept_rows(concept_of: Mapping[str, str], row: Mapping[str, int], ids: Sequence[str],
                 only: Iterable[str] | None = None) -> dict[str, list[int]]:
    """concept id -> rows of the facts it directly CONTAINS (in fact-id order); with ``only``, just those concepts."""
    want = None if only is None else set(only)
    out: dict[str, list[int]] = {}
    for f, c in concept_of.items():
        if (want is None or c in want) and f in row:
            out.setdefault(c, []).append(row[f])
    for c in out:
        out[c].sort(key=lambda r: ids[r])
    return out


def centroid(fmat: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    v = fmat[np.asarray(rows, dtype=int)].mean(axis=0)
    out: np.ndarray = (v / (np.linalg.norm(v) + 1e-12)).astype(np.float32)
    return out


def live_concepts(fmat: np.ndarray | None, concept_of: Mapping[str, str], row: Mapping[str, int], ids: Sequence[str],
                  base: tuple[dict[str, list[int]], dict[str, np.ndarray]] | None = None,
                  touched: Iterable[str] = ()) -> tuple[dict[str, list[int]], list[str], np.ndarray | None,
                                                        dict[str, np.ndarray]]:
    """(rows per concept, the route's concept ids in order, their centroid matrix, centroid per concept).

    With ``base`` (the previous version's rows and centroids), only the ``touched`` concepts (members
    added or removed, concept deleted) are recomputed; the rest are the previous version's.

    >>> m = np.eye(3, dtype=np.float32)
    >>> rows, cids, cmat, _ = live_concepts(m, {"a": "c1", "b": "c1", "c": "c2"}, {"a": 0, "b": 1, "c": 2}, ["a", "b", "c"])
    >>> rows, cids, cmat.shape
    ({'c1': [0, 1], 'c2': [2]}, ['c1'], (1, 3))
    """
    if base is None:
        rows = concept_rows(concept_of, row, ids)
        cent: dict[str, np.ndarray] = {}
        redo: Iterable[str] = rows
    else:
        touched = set(touched)
        rows = {c: r for c, r in base[0].items() if c not in touched}
        rows.update(concept_rows(concept_of, row, ids, touched))
        cent = {c: v for c, v in base[1].items() if c not in touched}
        redo = [c for c in touched if c in rows]
    if fmat is None:
        return rows, [], None, {}
    for c in redo:
        if len(rows[c]) >= MIN_MEMBERS:
            cent[c] = centroid(fmat, rows[c])
    cids = sorted(c for c in cent if len(rows.get(c, ())) >= MIN_MEMBERS)
    cmat = np.stack([cent[c] for c in cids]) if cids else None
    return rows, cids, cmat, cent
