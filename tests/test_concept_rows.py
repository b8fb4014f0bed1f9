"""The route index's concept -> members map is carried through commits from the ChangeSets alone
(retrieval/seeds/concepts.py: members_added, touched_rows): it equals a scan of the whole fact -> concept
map after random attaches, moves, removals and concept deletions, and the extension never iterates
that map (the commit path costs the touched concepts, not the user's history)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np

from graph.snapshot import ChangeSet
from retrieval.seeds.concepts import concept_rows, live_concepts, members_added


class NoScan(dict[str, str]):
    """A fact -> concept map that refuses to be iterated: only lookups are allowed."""

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the whole fact -> concept map was scanned")

    def items(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the whole fact -> concept map was scanned")

    def values(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the whole fact -> concept map was scanned")


def test_carried_members_equal_a_scan_and_never_scan() -> None:
    rng = random.Random(3)
    ids: list[str] = []
    concept_of: dict[str, str] = {}
    fmat = np.zeros((0, 4), dtype=np.float32)
    rows: dict[str, list[int]] = {}
    cent: dict[str, np.ndarray] = {}
    version = 0
    for step in range(40):
        cs = ChangeSet(user_id="u", expected_version=version, new_version=version + 1)
        concepts = sorted(set(concept_of.values())) + [f"c{step}"]
        for _ in range(rng.randint(1, 4)):  # new facts attached
            f = f"f{len(ids):03d}"
            ids.append(f)
            c = rng.choice(concepts)
            cs.contains_add.append((c, f))
        for f in rng.sample(sorted(concept_of), min(2, len(concept_of))):  # moves and removals
            cs.contains_remove.append((concept_of[f], f))
            if rng.random() < 0.6:
                cs.contains_add.append((rng.choice(concepts), f))
        if step % 7 == 6 and concept_of:  # a concept deleted with its edges
            cs.concepts_delete.append(rng.choice(sorted(set(concept_of.values()))))
        for c, f in cs.contains_remove:
            if concept_of.get(f) == c:
                del concept_of[f]
        for c, f in cs.contains_add:
            concept_of[f] = c
        concept_of = {f: c for f, c in concept_of.items() if c not in cs.concepts_delete}
        fmat = np.vstack([fmat, np.asarray(np.random.default_rng(step).normal(size=(len(ids) - len(fmat), 4)),
                                           dtype=np.float32)])
        row = {f: n for n, f in enumerate(ids)}
        touched = {c for c, _ in cs.contains_add} | {c for c, _ in cs.contains_remove} | set(cs.concepts_delete)
        rows, cids, cmat, cent = live_concepts(fmat, NoScan(concept_of), row, ids, (rows, cent), touched,
                                               members_added([cs]))
        want = concept_rows(concept_of, row, ids)
        assert rows == want, step
        full_rows, full_cids, full_cmat, _ = live_concepts(fmat, concept_of, row, ids)
        assert cids == full_cids and (cmat is None) == (full_cmat is None)
        if cmat is not None and full_cmat is not None:
            assert np.allclose(cmat, full_cmat)
        version += 1
    assert len(set(concept_of.values())) > 3  # the walk kept several concepts alive
