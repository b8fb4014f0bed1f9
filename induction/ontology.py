"""The living ontology: each session's facts find their concept, and the tree changes with the data.

The extractor proposes a topic path for every fact ("health", or "Caroline / health"); those topic
concepts are the tree's fixed *anchors* (the relation features compare facts by anchor, as the relation
model was trained). Below the anchors the concepts are induced, as one session after another arrives:

- ATTACH to the nearest live induced concept under the fact's anchor (cosine of the fact to the
  concept's centroid ≥ ``assign_sim``);
- CREATE a concept under the anchor for new facts that fit no concept and form a cluster of at least
  ``min_cluster`` among themselves (the rest stay on the anchor itself, unclustered);
- after the session, MERGE converged induced siblings (centroid cosine ≥ ``merge_sim``, the smaller
  into the larger), then SPLIT a concept whose direct facts (≥ ``split_min``) fall into two halves
  that raise its cohesion by ``split_gain``.

Each is an ordinary graph edit in the session's batch, so it is validated, logged (``evomem history``)
and undone (``evomem undo``) like any other. Induced concept ids are ``<anchor>/~<slug>`` and never
change; a fact always has one concept (MERGE and SPLIT move facts, never drop them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graph.edits import AttachFact, CreateConcept, MergeConcepts, OntologyEdit, RenameConcept, SplitChild, SplitConcept
from graph.snapshot import Snapshot
from induction.concept_state import INDUCED, ConceptStateCache, Stored, base_state, session_state
from induction.concept_state import State as _State
from induction.concepts import ConceptInductionConfig, leader_kmeans, split_halves
from induction.config import LivingConceptsConfig
from induction.naming import COVER, Embed


def anchor_of(concept_id: str) -> str:
    """The topic concept an induced concept hangs under (itself for a topic concept).

    >>> anchor_of("u::c::caroline/health/~pottery-class/~clay")
    'u::c::caroline/health'
    """
    return concept_id.split(INDUCED, 1)[0]


def _leaves_under(st: _State, anchor: str) -> list[str]:
    has_kids = {p for c, p in st.parent.items() if c in st.live}
    return sorted(c for c in st.live if INDUCED in c and anchor_of(c) == anchor and c not in has_kids)


def _place(st: _State, attaches: list[AttachFact], cfg: LivingConceptsConfig, icfg: ConceptInductionConfig,
           ) -> tuple[dict[str, str], list[CreateConcept]]:
    """Where each new fact goes (fact -> concept) and the CREATE edits for new clusters."""
    target: dict[str, str] = {}
    open_: dict[str, list[str]] = {}
    cents: dict[str, tuple[list[str], np.ndarray]] = {}
    for a in attaches:
        f, cid = a.fact.fact_id, a.concept_id
        target[f] = cid
        if INDUCED in cid or f not in st.vec:
            continue
        if cid not in cents:
            leaves = [c for c in _leaves_under(st, cid) if st.members(c)]
            cents[cid] = (leaves, np.stack([st.centroid(st.members(c)) for c in leaves]) if leaves else np.zeros((0, 1)))
        leaves, mat = cents[cid]
        if leaves:
            sims = mat @ st.vec[f]
            j = int(np.argmax(sims))
            if float(sims[j]) >= cfg.assign_sim:
                target[f] = leaves[j]
                continue
        open_.setdefault(cid, []).append(f)
    creates: list[CreateConcept] = []
    for anchor, fids in sorted(open_.items()):
        if len(fids) < cfg.min_cluster:
            continue
        labels = leader_kmeans(np.stack([st.vec[f] for f in fids]), cfg.radius, cfg.min_cluster)
        for j in range(int(labels.max()) + 1):
            part = [fids[r] for r in np.flatnonzero(labels == j)]
            if len(part) < cfg.min_cluster:
                continue
            name, desc = st.name(part)
            if not name:  # nothing characteristic (chat, thanks): not a concept, the facts stay on their topic
                continue
            cid = st.new_id(anchor, name)
            creates.append(CreateConcept(concept_id=cid, name=name, description=desc, parent_id=anchor))
            st.parent[cid] = anchor
            st.live.add(cid)
            st.created_now.add(cid)
            target.update({f: cid for f in part})
    return target, creates


def _merges(st: _State, cfg: LivingConceptsConfig) -> list[MergeConcepts]:
    """Converged induced siblings, closest pair first; each concept in at most one merge per session."""
    by_parent: dict[str, list[str]] = {}
    for c in sorted(st.live):
        if INDUCED in c and st.members(c):
            by_parent.setdefault(st.parent.get(c, ""), []).append(c)
    out: list[MergeConcepts] = []
    used: set[str] = set()
    for _, kids in sorted(by_parent.items()):
        if len(kids) < 2:
            continue
        mem = {c: st.members(c) for c in kids}
        mat = np.stack([st.centroid(mem[c]) for c in kids])
        sims = mat @ mat.T
        pairs = sorted(((float(sims[i, j]), i, j) for i in range(len(kids)) for j in range(i + 1, len(kids))
                        if sims[i, j] >= cfg.merge_sim), reverse=True)
        for _, i, j in pairs:
            a, b = kids[i], kids[j]
            if a in used or b in used or a in st.parent.values() or b in st.parent.values():
                continue  # only leaves merge: folding a parent would reshape a subtree
            if st.split_from.get(a, a) == st.split_from.get(b, b):
                continue  # halves of one SPLIT were apart by the data's own measure: no merge back
            src, tgt = (a, b) if (len(mem[a]), b) < (len(mem[b]), a) else (b, a)
            out.append(MergeConcepts(source_id=src, target_id=tgt))
            used.update((a, b))
            for f in mem[src]:
                st.move(f, tgt)
            for c in [c for c, p in st.parent.items() if p == src]:
                st.parent[c] = tgt
            st.live.discard(src)
    return out


def _splits(st: _State, cfg: LivingConceptsConfig, icfg: ConceptInductionConfig, skip: set[str]) -> list[SplitConcept]:
    tried: list[tuple[str, list[str], list[list[str]], tuple[object, ...]]] = []
    for c in sorted(st.live):
        if c in skip or c in st.created_now or c == st.snap.root_id:
            continue
        fids = st.members(c)
        if len(fids) < cfg.split_min:
            continue
        key: tuple[object, ...] = (frozenset(fids), st.namer.names, st.namer.proper, icfg.model_dump_json())
        if st.no_split.get(c) == key:
            continue  # tried with these very inputs before: no split
        halves = split_halves(np.stack([st.vec[f] for f in fids]), icfg)
        if halves is None:
            st.no_split[c] = key
            continue
        tried.append((c, fids, [[f for f, lab in zip(fids, halves) if lab == h] for h in (0, 1)], key))
    # one embedding call for every candidate name word of every half: called per half, the embedder's
    # fixed cost per call was most of the concept step (~30 calls of ~48 ms a session on a long history)
    st.prefetch_names([(p, fids) for _, fids, parts, _ in tried for p in parts])
    out: list[SplitConcept] = []
    for c, fids, parts, key in tried:
        named = [st.name(p, fids) for p in parts]
        if not all(n for n, _ in named) or named[0][0] == named[1][0]:
            st.no_split[c] = key
            continue  # a half that nothing characterises is no topic of its own
        kids = tuple(SplitChild(concept_id=st.new_id(c, n), name=n, description=d, fact_ids=tuple(p))
                     for p, (n, d) in zip(parts, named))
        out.append(SplitConcept(concept_id=c, children=kids))
    return out


def _renames(st: _State, cfg: LivingConceptsConfig, touched: set[str], skip: set[str]) -> list[RenameConcept]:
    """Concepts whose members changed this session and whose name is no longer among their members'
    ``rename_top`` characteristic terms: named again from the members they have now."""
    out: list[RenameConcept] = []
    if cfg.rename_top <= 0:
        return out
    for c in sorted(touched):
        if c in skip or c in st.created_now or c not in st.live or INDUCED not in c:
            continue
        fids = st.members(c)
        if len(fids) < cfg.min_cluster:
            continue
        old = st.snap.concepts[c].name if c in st.snap.concepts else ""
        top = {w for w, _ in st.ranked(fids)[: cfg.rename_top]}
        if old and any(t in top for t in old.split(" and ")) and st.namer.holds(old, [st.text[f] for f in fids]) >= COVER:
            continue  # the name still says what the members share (and a third of them still hold it)
        name, desc = st.name(fids)
        if name and name != old:
            out.append(RenameConcept(concept_id=c, name=name, description=desc))
    return out


def living_edits(snap: Snapshot, edits: Sequence[OntologyEdit], stored: Stored, cfg: LivingConceptsConfig,
                 embed: Embed | None = None, cache: ConceptStateCache | None = None) -> list[OntologyEdit]:
    """``edits`` (one session's, from ``to_edits``) with each new fact sent to its induced concept, the
    CREATE edits for new clusters before the ATTACHes, and the session's MERGE, SPLIT and RENAME edits last.

    ``stored``: the user's stored fact vectors (``GraphStore.embeddings``), or a function that reads them
    (called only when ``cache`` does not hold the user's state at ``snap.version``); ``embed``: the fact
    embedder, which lets names be chosen by closeness to the members' centre (``induction.naming``);
    ``cache``: the user's state kept between sessions (the caller advances it after the commit)."""
    icfg = ConceptInductionConfig(radius=cfg.radius, min_cluster=cfg.split_child_min, split_min=cfg.split_min,
                                  split_gain=cfg.split_gain)
    if cache is not None:
        base = cache.get(snap, stored, embed)
    else:
        base = base_state(snap, stored() if callable(stored) else stored, embed)
    st = session_state(base, snap, edits)
    attaches = [e for e in edits if isinstance(e, AttachFact)]
    target, creates = _place(st, attaches, cfg, icfg)
    for f, c in target.items():
        st.move(f, c)
    merges = _merges(st, cfg)
    merged = {m.target_id for m in merges} | {m.source_id for m in merges}
    splits = _splits(st, cfg, icfg, merged)
    touched = set(target.values()) | {m.target_id for m in merges}
    renames = _renames(st, cfg, touched, {s.concept_id for s in splits})
    head = [e for e in edits if isinstance(e, (CreateConcept, MergeConcepts, SplitConcept))]
    rest = [e for e in edits if not isinstance(e, (CreateConcept, MergeConcepts, SplitConcept, AttachFact))]
    moved = [a.model_copy(update={"concept_id": target[a.fact.fact_id]}) for a in attaches]
    return [*head, *creates, *moved, *rest, *merges, *splits, *renames]


__all__ = ["INDUCED", "ConceptStateCache", "anchor_of", "living_edits"]
