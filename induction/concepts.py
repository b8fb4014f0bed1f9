"""Concepts induced from the user's own facts: clusters of fact vectors, named by their most
characteristic terms, changed by the paper's edits when the data says so.

- CREATE: facts that sit near no live concept (cosine to every centroid below ``assign_sim``) and
  form a cluster of at least ``min_cluster`` among themselves get a new concept.
- MERGE: two live sibling concepts whose centroids converge (cosine ≥ ``merge_sim``): the smaller
  folds into the larger.
- SPLIT: a leaf concept of at least ``split_min`` facts whose two-means halves are each at least
  ``min_cluster`` and raise the mean member-to-centroid cosine by ``split_gain``: it grew
  heterogeneous, so it gets two children.

Names never decide an edit: members with no characteristic term are shown as "unnamed" (as in
``induction.ontology``). Pure functions over ids, vectors and texts (the caller embeds): ``plan_concept_edits`` returns graph
edits that ``graph.edits.apply_batch`` validates like any other; ``induce_tree`` builds a whole
two-level tree at once (reports, and the concept route's notion of a concept).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from graph.edits import CreateConcept, MergeConcepts, SplitChild, SplitConcept
from retrieval.seeds.clusters import centroids, leader_kmeans, two_means
from graph.snapshot import Snapshot
from induction.naming import UNNAMED
from induction.offline import STOP

_WORD = re.compile(r"[a-z][a-z'\-]{2,}")
_SPEAKER = re.compile(r"^[^:\n]{1,40}:\s*")
# Words every kind of fact uses: they name no topic.
_GENERIC = frozenset("shared image photo picture pic one really feel felt make made time things thing yesterday "
                     "last week today always never ever something someone people new "
                     # contractions and connectives that survive STOP but name no topic ("means / since")
                     "you're we're they're it's don't didn't can't isn't wasn't that's let's since means mean "
                     "into even still maybe every other more most".split())


class ConceptInductionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    radius: float = Field(default=0.45, ge=-1, le=1, description="A fact farther (cosine) than this from every cluster centre opens a new cluster.")
    min_cluster: int = Field(default=4, ge=1, description="Facts a cluster needs to become (or stay) a concept.")
    assign_sim: float = Field(default=0.35, ge=-1, le=1, description="A new fact joins the nearest live concept at this cosine or more.")
    merge_sim: float = Field(default=0.9, ge=-1, le=1, description="Sibling concepts whose centroids are this close merge.")
    split_min: int = Field(default=24, ge=2, description="Only concepts with at least this many facts are split.")
    split_gain: float = Field(default=0.03, ge=0, description="Cohesion gain (mean cosine to own centroid) a split must bring.")
    name_terms: int = Field(default=2, ge=1, le=5, description="Characteristic terms in a concept's name.")


@dataclass
class InducedConcept:
    name: str
    fact_ids: list[str]
    children: list[InducedConcept] = field(default_factory=list)


def _norm(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(m, dtype=np.float32)
    return out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-12)


def characteristic_terms(members: Sequence[str], corpus: Sequence[str], n: int = 2) -> list[str]:
    """The terms most over-represented in ``members`` against ``corpus`` (smoothed log-odds × count).

    >>> characteristic_terms(["I adopted a dog", "the dog loves walks"], ["I adopted a dog", "the dog loves walks",
    ...                      "work was busy", "my boss called"], 1)
    ['dog']
    """
    def words(t: str) -> list[str]:
        t = _SPEAKER.sub("", t)  # "Caroline: ..." names the holder, not the topic
        return [w.strip("'-") for w in _WORD.findall(t.lower()) if w not in STOP and w not in _GENERIC]

    inside = Counter(w for t in members for w in set(words(t)))
    total = Counter(w for t in corpus for w in set(words(t)))
    m, c = max(len(members), 1), max(len(corpus), 1)
    score = {w: k * math.log(((k + 0.5) / (m + 1)) / ((total[w] + 0.5) / (c + 1))) for w, k in inside.items() if k >= 2 or m < 4}
    return [w for w, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def _name(rows: Sequence[int], texts: Sequence[str], n: int) -> str:
    return " / ".join(characteristic_terms([texts[r] for r in rows], texts, n)) or UNNAMED


def cohesion(m: np.ndarray) -> float:
    """Mean cosine of the rows to their (normalised) centroid."""
    c = m.mean(axis=0)
    return float(np.mean(m @ (c / (np.linalg.norm(c) + 1e-12)))) if len(m) else 0.0


def split_halves(m: np.ndarray, cfg: ConceptInductionConfig) -> np.ndarray | None:
    """Two-means labels when the split makes both halves big enough and cohesion rises, else None."""
    if len(m) < cfg.split_min:
        return None
    lab = two_means(m)
    sizes = np.bincount(lab, minlength=2)
    if sizes.min() < cfg.min_cluster:
        return None
    after = (sizes[0] * cohesion(m[lab == 0]) + sizes[1] * cohesion(m[lab == 1])) / len(m)
    return lab if after - cohesion(m) >= cfg.split_gain else None


def induce_tree(fact_ids: Sequence[str], vectors: np.ndarray, texts: Sequence[str],
                cfg: ConceptInductionConfig | None = None) -> list[InducedConcept]:
    """A two-level tree from scratch: clusters, and the children of those that are heterogeneous."""
    cfg = cfg or ConceptInductionConfig()
    m = _norm(vectors)
    labels = leader_kmeans(m, cfg.radius, cfg.min_cluster)
    out: list[InducedConcept] = []
    for j in range(int(labels.max()) + 1 if len(labels) else 0):
        rows = [int(r) for r in np.flatnonzero(labels == j)]
        node = InducedConcept(_name(rows, texts, cfg.name_terms), [fact_ids[r] for r in rows])
        halves = split_halves(m[rows], cfg)
        if halves is not None:
            parts = [[r for r, lab in zip(rows, halves) if lab == h] for h in (0, 1)]
            node.children = [InducedConcept(_name(p, texts, cfg.name_terms), [fact_ids[r] for r in p]) for p in parts]
        out.append(node)
    return sorted(out, key=lambda c: -len(c.fact_ids))


def render_tree(tree: Sequence[InducedConcept], texts: Mapping[str, str] | None = None, examples: int = 0) -> str:
    lines: list[str] = []

    def walk(c: InducedConcept, depth: int) -> None:
        lines.append(f"{'  ' * depth}- {c.name} ({len(c.fact_ids)} facts)")
        if texts and not c.children:
            lines.extend(f"{'  ' * (depth + 1)}· {texts[f][:100]}" for f in c.fact_ids[:examples])
        for ch in c.children:
            walk(ch, depth + 1)

    for c in tree:
        walk(c, 0)
    return "\n".join(lines)


def plan_concept_edits(snap: Snapshot, vectors: Mapping[str, np.ndarray], texts: Mapping[str, str],
                       new_fact_ids: Sequence[str] = (), cfg: ConceptInductionConfig | None = None,
                       ) -> tuple[list[CreateConcept | MergeConcepts | SplitConcept], dict[str, str]]:
    """Edits the data calls for on ``snap`` plus where each of ``new_fact_ids`` goes.

    Returns (edits, placement): placement maps a new fact to a live concept id or to the id of a
    concept one of the CREATE edits makes; a new fact that fits nowhere and forms no cluster stays
    unplaced (the caller's default concept takes it).
    """
    cfg = cfg or ConceptInductionConfig()
    user = snap.user_id
    live = {c for c, v in snap.concepts.items() if v.retired_at is None and c != snap.root_id}
    members: dict[str, list[str]] = {}
    for f, c in snap.fact_concept.items():
        if c in live and f in vectors:
            members.setdefault(c, []).append(f)
    cids = sorted(members)
    cent = {c: _norm(np.stack([vectors[f] for f in members[c]]).mean(axis=0, keepdims=True))[0] for c in cids}
    edits: list[CreateConcept | MergeConcepts | SplitConcept] = []
    # MERGE: converged siblings (same parent), the smaller into the larger.
    gone: set[str] = set()
    for i, a in enumerate(cids):
        for b in cids[i + 1:]:
            if a in gone or b in gone or snap.parent.get(a) != snap.parent.get(b):
                continue
            if float(cent[a] @ cent[b]) >= cfg.merge_sim:
                src, tgt = (a, b) if len(members[a]) < len(members[b]) else (b, a)
                edits.append(MergeConcepts(source_id=src, target_id=tgt))
                gone.add(src)
                members[tgt] = members[tgt] + members[src]
    # SPLIT: heterogeneous leaves.
    has_children = set(snap.parent.values())
    all_texts = [texts[f] for f in sorted(texts)]
    for c in cids:
        if c in gone or c in has_children:
            continue
        fids = sorted(members[c])
        m = _norm(np.stack([vectors[f] for f in fids]))
        halves = split_halves(m, cfg)
        if halves is None:
            continue
        kids = []
        for h in (0, 1):
            part = [f for f, lab in zip(fids, halves) if lab == h]
            name = " / ".join(characteristic_terms([texts[f] for f in part], all_texts, cfg.name_terms)) or UNNAMED
            kids.append(SplitChild(concept_id=f"{c}/{h + 1}-{_slug(name)}", name=name, fact_ids=tuple(part)))
        edits.append(SplitConcept(concept_id=c, children=tuple(kids)))
    # CREATE: new facts near no live concept that cluster among themselves.
    placement: dict[str, str] = {}
    open_: list[str] = []
    targets = [c for c in cids if c not in gone]
    tmat = np.stack([cent[c] for c in targets]) if targets else None
    for f in new_fact_ids:
        if f not in vectors:
            continue
        v = _norm(vectors[f][None, :])[0]
        if tmat is not None:
            sims = tmat @ v
            j = int(np.argmax(sims))
            if sims[j] >= cfg.assign_sim:
                placement[f] = targets[j]
                continue
        open_.append(f)
    if len(open_) >= cfg.min_cluster:
        m = _norm(np.stack([vectors[f] for f in open_]))
        labels = leader_kmeans(m, cfg.radius, cfg.min_cluster)
        for j in range(int(labels.max()) + 1):
            part = [open_[r] for r in np.flatnonzero(labels == j)]
            if len(part) < cfg.min_cluster:
                continue
            name = " / ".join(characteristic_terms([texts[f] for f in part], all_texts, cfg.name_terms)) or UNNAMED
            cid = f"{user}::c::induced/{_slug(name)}"
            if cid in snap.concepts:
                cid = f"{cid}-{len(snap.concepts)}"
            edits.append(CreateConcept(concept_id=cid, name=name))
            placement.update({f: cid for f in part})
    return edits, placement


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


__all__ = ["ConceptInductionConfig", "InducedConcept", "centroids", "characteristic_terms", "induce_tree",
           "plan_concept_edits", "render_tree"]
