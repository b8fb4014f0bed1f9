"""The living ontology: each session's facts find their concept, and the tree changes with the data.

The extractor proposes a topic path for every fact ("health", or "Caroline / health"); those topic
concepts are the tree's fixed *anchors* (the relation features compare facts by anchor, as the relation
model was trained). Below the anchors the concepts are induced, as one session after another arrives.
What exists is decided by the fact vectors alone; names come afterwards:

- ATTACH to the nearest live induced concept under the fact's anchor (cosine of the fact to the
  concept's centroid ≥ ``assign_sim``);
- CREATE a concept under the anchor for new facts that fit no concept and form a cluster among themselves:
  at least ``min_cluster`` facts (three: two facts are a pair, not a topic), whose mean cosine to their
  centroid is at least ``radius`` (the closeness at which leader clustering lets a fact join a cluster
  instead of opening one: a cluster looser than that on average is no cluster by the clustering's own
  measure). The rest stay on the anchor itself, unclustered;
- after the session, MERGE converged induced siblings (centroid cosine ≥ ``merge_sim``, the smaller
  into the larger), then SPLIT a concept whose direct facts (≥ ``split_min``) fall into two halves of at
  least ``split_child_min`` each that raise its cohesion by ``split_gain``.

Then every concept made this session is named (``induction.naming``); one the namer cannot name, or a
SPLIT's half whose name its sibling already has, is shown as "unnamed (its characteristic terms)"
(``naming.unnamed_label``): a display state, never a reason not to make the concept. An unnamed
concept is named by RENAME as soon as its members change and the namer finds a name.

Each is an ordinary graph edit in the session's batch, so it is validated, logged (``evomem history``)
and undone (``evomem undo``) like any other. Induced concept ids are ``<anchor>/~<slug>`` (the slug of
the name or label first shown) and never change; a fact always has one concept (MERGE and SPLIT move
facts, never drop them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graph.edits import AttachFact, CreateConcept, MergeConcepts, OntologyEdit, RenameConcept, SplitChild, SplitConcept
from graph.snapshot import Snapshot
from induction.concept_state import INDUCED, ConceptStateCache, Stored, base_state, session_state
from induction.concept_state import State as _State
from induction.concepts import ConceptInductionConfig, cohesion, leader_kmeans, split_halves
from induction.config import LivingConceptsConfig
from induction.naming import COVER, Embed, is_unnamed, unnamed_label


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
    groups: list[tuple[str, list[str]]] = []
    for anchor, fids in sorted(open_.items()):
        if len(fids) < cfg.min_cluster:
            continue
        m = np.stack([st.vec[f] for f in fids])
        labels = leader_kmeans(m, cfg.radius, cfg.min_cluster)
        for j in range(int(labels.max()) + 1):
            rows = np.flatnonzero(labels == j)
            if len(rows) >= cfg.min_cluster and cohesion(m[rows]) >= cfg.radius:
                groups.append((anchor, [fids[r] for r in rows]))
    # the data made these concepts; now they are named (one embedding call for every candidate word)
    st.prefetch_names([(p, ()) for _, p in groups])
    creates: list[CreateConcept] = []
    for anchor, part in groups:
        name, desc = st.label(part)
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
    tried: list[tuple[str, list[str], list[list[str]]]] = []
    for c in sorted(st.live):
        if c in skip or c in st.created_now or c == st.snap.root_id:
            continue
        fids = st.members(c)
        if len(fids) < cfg.split_min:
            continue
        key: tuple[object, ...] = (frozenset(fids), icfg.model_dump_json())
        if st.no_split.get(c) == key:
            continue  # tried with these very members before: no split
        halves = split_halves(np.stack([st.vec[f] for f in fids]), icfg)
        if halves is None:
            st.no_split[c] = key
            continue
        tried.append((c, fids, [[f for f, lab in zip(fids, halves) if lab == h] for h in (0, 1)]))
    # the splits are decided; the halves are named against their parent's facts, all candidate words in one
    # embedding call (called per half, the embedder's fixed cost per call was most of the concept step)
    st.prefetch_names([(p, fids) for _, fids, parts in tried for p in parts])
    out: list[SplitConcept] = []
    for c, fids, parts in tried:
        named = [st.label(p, fids) for p in parts]
        if named[0][0] == named[1][0] and not is_unnamed(named[0][0]):
            # one name for both halves tells them apart by nothing: the half that holds it less is shown unnamed
            k = int(st.namer.holds(named[0][0], [st.text[f] for f in parts[0]])
                    >= st.namer.holds(named[1][0], [st.text[f] for f in parts[1]]))
            named[k] = (unnamed_label(st.ranked_within(parts[k], fids)), named[k][1])
        kids = tuple(SplitChild(concept_id=st.new_id(c, n), name=n, description=d, fact_ids=tuple(p))
                     for p, (n, d) in zip(parts, named))
        out.append(SplitConcept(concept_id=c, children=kids))
    return out


def _renames(st: _State, cfg: LivingConceptsConfig, touched: set[str], skip: set[str]) -> list[RenameConcept]:
    """Concepts whose members changed this session and whose name is no longer among their members'
    ``rename_top`` characteristic terms: named again from the members they have now. An unnamed concept
    (``naming.is_unnamed``) is renamed only to a name, never from one unnamed label to another."""
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
