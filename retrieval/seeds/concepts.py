"""The concept route's view of the live concept tree: each concept's member rows and centroid.

Ingestion keeps the tree (induction/ontology.py: facts ATTACHed to the nearest concept, CREATE, MERGE
and SPLIT in the commit path, stored as ``PARENT_OF`` / ``CONTAINS``). The route index reads it as it
is stored: a concept that directly CONTAINS at least ``MIN_MEMBERS`` facts is a route target, and its
centroid is the mean of its members' retrieval vectors. Nothing is induced at read time, so the
concepts a request lands in are the ones ``evomem concepts`` shows, and an index extended by a
commit's ChangeSet (retrieval/seeds/delta.py) holds exactly what a rebuild holds: only the concepts
whose membership the commit changed are recomputed, members are summed in fact-id order. The index's
``concept_rows`` is itself the concept -> members map: a touched concept's members are its previous
members and the facts the ChangeSets' ``contains_add`` put in it, kept where the fact's concept is
still that one (``contains_remove``, a move, a deleted concept), so a commit costs the size of the
concepts it touched, not a scan of the user's whole fact -> concept map.
"""

from __future__ import annotations

import bisect

from collections.abc import Iterable, Mapping, Sequence

from graph.snapshot import ChangeSet

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


def members_added(changes: Iterable[ChangeSet]) -> dict[str, set[str]]:
    """concept id -> the facts ``changes`` put in it (CONTAINS added), whatever later moved them."""
    out: dict[str, set[str]] = {}
    for cs in changes:
        for c, f in cs.contains_add:
            out.setdefault(c, set()).add(f)
    return out


def touched_rows(concept_of: Mapping[str, str], row: Mapping[str, int], ids: Sequence[str],
                 before: Mapping[str, Sequence[int]], added: Mapping[str, Iterable[str]],
                 touched: Iterable[str]) -> dict[str, list[int]]:
    """concept id -> rows of its direct members now (in fact-id order), for the ``touched`` concepts only:
    of its members ``before`` and the facts ``added`` to it, those whose concept is still that one.
    Nothing outside those concepts is read.

    >>> touched_rows({"a": "c1", "b": "c2", "c": "c1"}, {"a": 0, "b": 1, "c": 2}, ["a", "b", "c"],
    ...              {"c1": [0, 1]}, {"c1": {"c"}, "c2": {"b"}}, ["c1", "c2"])
    {'c1': [0, 2], 'c2': [1]}
    """
    out: dict[str, list[int]] = {}
    for c in touched:
        # The previous rows are already in fact-id order: keep those still in c, then insert the session's
        # few new members by bisection, instead of re-sorting the whole concept each commit (at 10k members
        # the sort cost 4x the scan this function replaced).
        rows = [r for r in before.get(c, ()) if concept_of.get(ids[r]) == c]
        for f in added.get(c, ()):
            if concept_of.get(f) != c or f not in row:
                continue
            i = bisect.bisect_left(rows, f, key=lambda r: ids[r])
            if i == len(rows) or ids[rows[i]] != f:
                rows.insert(i, row[f])
        if rows:
            out[c] = rows
    return out


def centroid(fmat: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    v = fmat[np.asarray(rows, dtype=int)].mean(axis=0)
    out: np.ndarray = (v / (np.linalg.norm(v) + 1e-12)).astype(np.float32)
    return out


def live_concepts(fmat: np.ndarray | None, concept_of: Mapping[str, str], row: Mapping[str, int], ids: Sequence[str],
                  base: tuple[dict[str, list[int]], dict[str, np.ndarray]] | None = None,
                  touched: Iterable[str] = (), added: Mapping[str, Iterable[str]] | None = None) -> tuple[dict[str, list[int]], list[str], np.ndarray | None,
                                                        dict[str, np.ndarray]]:
    """(rows per concept, the route's concept ids in order, their centroid matrix, centroid per concept).

    With ``base`` (the previous version's rows and centroids), only the ``touched`` concepts (members
    added or removed, concept deleted) are recomputed; the rest are the previous version's. With
    ``added`` too (``members_added`` of the ChangeSets), a touched concept's members come from its
    previous rows and those facts (``touched_rows``) instead of a scan of ``concept_of``.

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
        rows.update(concept_rows(concept_of, row, ids, touched) if added is None
                    else touched_rows(concept_of, row, ids, base[0], added, touched))
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
