"""One route index version extended by the ChangeSets committed since: no rebuild after a session.

``extend_index(base, changes, ...)`` returns the index at the last ChangeSet's version, built from
``base`` and the ChangeSets alone: new facts are appended as rows (their retrieval vectors to the fact
matrix, their words to the BM25 postings, their entities, times and standing instructions), their
turns likewise (turn matrix, turn BM25, place in the session, recency), changed facts replace their
record (and time), relations, concept placement and the concept tree are updated. The cost follows
the ChangeSets, not the user's history: the per-row arrays share append-only buffers with ``base``
(retrieval/seeds/textindex.py), and what is copied is only the top level of each table.

The ranking is the one a rebuild gives: every route breaks ties by fact id or turn key, never by row
(retrieval/seeds/rank.py), and BM25 statistics are taken at query time. The concept route reads the
live tree ingestion stores (retrieval/seeds/concepts.py): only the concepts whose membership a
ChangeSet touched (CONTAINS added or removed, a MERGE, a SPLIT, a deleted concept) get their rows and
centroid recomputed.

What ``extensible`` refuses (a deleted fact, a fact whose text, holder or source turns changed, a
fact created twice) the caller rebuilds from a snapshot.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from graph.models import Fact, Relation, as_utc
from retrieval.seeds.concepts import live_concepts, members_added
from retrieval.seeds.model import ConceptPaths, Embed, Memo, Order, RouteIndex, entities_of, fact_time, retrieval_text, turn_recency
from retrieval.seeds.textindex import Grow
from graph.rules import EVIDENCE_HOLDERS
from retrieval.seeds.instruction import standing_instruction
from graph.snapshot import ChangeSet

StoredTurn = tuple[str, str, str, str, datetime | None, int]  # turn id, role, text, session id, said at, seq


def extensible(base: RouteIndex, changes: Sequence[ChangeSet]) -> bool:
    """Whether ``extend_index`` can take ``base`` through ``changes`` (else: rebuild)."""
    if base.fmat is None or "times" not in base.grow or not (base.fbm25.newest() and base.tbm25.newest()):
        return False  # a text index some other version was extended from: rebuild
    known: dict[str, Fact] = {}
    for cs in changes:
        if cs.facts_delete:
            return False
        for f in cs.facts_create:
            if f.fact_id in base.facts or f.fact_id in known:
                return False
            known[f.fact_id] = f
        for f in cs.facts_update:
            old = known.get(f.fact_id) or base.facts.get(f.fact_id)
            if old is None or (old.statement, old.holder, old.source_turn_ids) != (f.statement, f.holder, f.source_turn_ids):
                return False
            known[f.fact_id] = f
    return True


def _grown(grow: Grow | None, have: np.ndarray | None, rows: np.ndarray) -> Grow:
    """``have`` (a version's view) with ``rows`` appended: in its shared buffer when that version is the
    newest on it, else in a copy."""
    if grow is None or have is None or grow.n != len(have):
        grow = Grow(have if have is not None else rows[:0])
    grow.append(rows)
    return grow


def _ordered(rows: list[int], add: int, ids: list[str]) -> list[int]:
    """A copy of ``rows`` (kept in fact id order) with ``add`` in its place."""
    out = list(rows)
    bisect.insort(out, add, key=lambda r: ids[r])
    return out


def extend_index(base: RouteIndex, changes: Sequence[ChangeSet], token: str, embed: Embed | None, memo: Memo,
                 fetch_turns: Callable[[Sequence[str]], Sequence[StoredTurn]] | None) -> RouteIndex:
    assert embed is not None and base.fmat is not None
    facts = dict(base.facts)
    created: dict[str, Fact] = {}
    moved_time = False
    relations_of = dict(base.relations_of)
    concept_of, concepts, parent = dict(base.concept_of), dict(base.concepts), dict(base.parent)
    said: dict[str, StoredTurn] = {}
    regrouped: set[str] = set()  # concepts whose direct members changed
    for cs in changes:
        regrouped.update(c for c, _ in cs.contains_remove)
        regrouped.update(c for c, _ in cs.contains_add)
        regrouped.update(cs.concepts_delete)
        for f in cs.facts_create:
            created[f.fact_id] = f
        for f in cs.facts_update:
            if f.fact_id in created:
                created[f.fact_id] = f
            else:
                moved_time |= fact_time(facts[f.fact_id]) != fact_time(f) or facts[f.fact_id].observed_at != f.observed_at
                facts[f.fact_id] = f
        for r in cs.relations_remove:
            _unrelate(relations_of, r)
        for r in cs.relations_update:
            _unrelate(relations_of, r)
            _relate(relations_of, r)
        for r in cs.relations_add:
            _relate(relations_of, r)
        for con in cs.concepts_upsert:
            concepts[con.concept_id] = con
        for up, child in cs.parent_remove:
            if parent.get(child) == up:
                del parent[child]
        for up, child in cs.parent_add:
            parent[child] = up
        for cid, fid in cs.contains_remove:
            if concept_of.get(fid) == cid:
                del concept_of[fid]
        for cid, fid in cs.contains_add:
            concept_of[fid] = cid
        for cid in cs.concepts_delete:
            concepts.pop(cid, None)
        for turn in cs.turns_create:
            said[turn.turn_id] = (turn.turn_id, turn.role, turn.text, turn.session_id, turn.at, turn.seq)
    if any(c not in concepts for c in set(concept_of.values())) or any(
            c not in concepts or p not in concepts for c, p in parent.items()):  # a deleted concept's edges go with it
        concept_of = {f: c for f, c in concept_of.items() if c in concepts}
        parent = {c: p for c, p in parent.items() if c in concepts and p in concepts}
    facts.update(created)

    # -- facts: appended rows --
    n0 = len(base.ids)
    new_ids = sorted(created)
    ids = base.ids + new_ids
    row = dict(base.row)
    row.update((f, n) for n, f in enumerate(new_ids, start=n0))
    rtexts = [retrieval_text(facts[i]) for i in new_ids]
    vecs = memo.embed(embed, rtexts) if new_ids else None
    grow = dict(base.grow)
    fmat = base.fmat
    if vecs is not None:
        grow["f"] = _grown(base.grow.get("f"), base.fmat, vecs)
        fmat = grow["f"].view(len(ids))
    times_old = base.times
    if moved_time:  # a changed fact's time: the shared buffer is not rewritten under older versions
        times_old = np.asarray([_seconds(facts[i]) for i in base.ids], dtype=np.float64)
    grow["times"] = _grown(None if moved_time else base.grow["times"], times_old,
                           np.asarray([_seconds(facts[i]) for i in new_ids], dtype=np.float64))
    fbm25 = base.fbm25.extend(rtexts) if new_ids else base.fbm25
    assert fbm25 is not None  # extensible checked it
    entity_rows = dict(base.entity_rows)
    turn_facts = dict(base.turn_facts)
    for n, i in enumerate(new_ids, start=n0):
        f = facts[i]
        for e in entities_of(rtexts[n - n0]) | ({f.holder.lower()} if f.holder not in ("", "user") else set()):
            entity_rows[e] = [*entity_rows.get(e, ()), n]
        for tid in f.source_turn_ids:
            turn_facts[tid] = _ordered(turn_facts.get(tid, []), n, ids)

    # -- turns: the ones new facts cite, appended; the ones that gained facts updated --
    touched = {t for i in new_ids for t in facts[i].source_turn_ids}
    fresh = [t for t in touched if t not in base.turn_index]
    missing = [t for t in fresh if t not in said]
    if missing and fetch_turns is not None:
        said.update((t[0], t) for t in fetch_turns(sorted(missing)))
    fresh = sorted((t for t in fresh if t in said), key=lambda t: (said[t][3], said[t][5], t))
    t0 = len(base.turn_ids)
    turn_ids = base.turn_ids + fresh
    turn_index = dict(base.turn_index)
    turn_index.update((t, k) for k, t in enumerate(fresh, start=t0))
    ttexts = [f"{said[t][1]}: {said[t][2]}" for t in fresh]
    tmat = base.tmat
    if fresh:
        tv = memo.embed(embed, ttexts)
        assert tv is not None
        grow["t"] = _grown(base.grow.get("t"), base.tmat, tv)
        tmat = grow["t"].view(len(turn_ids))
    tbm25 = base.tbm25.extend(ttexts) if fresh else base.tbm25
    assert tbm25 is not None  # extensible checked it
    turn_rows = base.turn_rows + [turn_facts[t] for t in fresh]
    turn_said = base.turn_said + [said[t][4] for t in fresh]
    turn_key = base.turn_key + [(said[t][3], said[t][5], t) for t in fresh]
    place: list[tuple[str, int] | None] = [(said[t][3], said[t][5]) for t in fresh]
    turn_at = dict(base.turn_at)
    turn_at.update((p, k) for k, p in enumerate(place, start=t0) if p is not None)
    recency = list(base.turn_recency)
    again = {turn_index[t] for t in touched if t in turn_index}
    if moved_time:  # a changed fact's time can move an undated turn's recency
        again = set(range(len(turn_ids)))
    for k in sorted(again):
        if k < t0:
            turn_rows[k] = turn_facts[turn_ids[k]]
    when = {turn_ids[k]: (turn_said[k], turn_key[k][1]) for k in again}
    recency += [(0.0, 0)] * len(fresh)
    for k in again:
        recency[k] = turn_recency(turn_ids[k], turn_rows[k], ids, facts, when)

    # -- concepts: the live tree's members and centroids, recomputed for the concepts this commit touched --
    concept_rows, concept_ids, cmat, centres = live_concepts(fmat, concept_of, row, ids,
                                                             (base.concept_rows, base.concept_centroids), regrouped,
                                                             members_added(changes))

    latest = base.latest
    if moved_time:
        obs = [as_utc(f.observed_at).replace(tzinfo=None) for f in facts.values() if f.observed_at]
        latest = max(obs) if obs else None
    else:
        obs = [as_utc(f.observed_at).replace(tzinfo=None) for f in (facts[i] for i in new_ids) if f.observed_at]
        latest = max([*obs, *([latest] if latest else [])]) if obs or latest else None
    return replace(
        base, token=token, facts=facts, ids=ids, fmat=fmat, fbm25=fbm25,
        holder=base.holder + [facts[i].holder for i in new_ids], turn_ids=turn_ids, tmat=tmat, tbm25=tbm25,
        turn_facts=turn_facts, turn_rows=turn_rows, entity_rows=entity_rows, times=grow["times"].view(len(ids)),
        concept_rows=concept_rows, concept_ids=concept_ids, cmat=cmat, latest=latest, row=row,
        relations_of=relations_of, concept_of=concept_of, concept_paths=ConceptPaths(concept_of, concepts, parent),
        turn_role=base.turn_role + [said[t][1] for t in fresh], turn_recency=recency,
        instruction_rows=base.instruction_rows + [n for n, i in enumerate(new_ids, start=n0)
                                                  if facts[i].holder not in EVIDENCE_HOLDERS
                                                  and standing_instruction(facts[i].statement)],
        turn_place=base.turn_place + place, turn_at=turn_at, turn_index=turn_index, turn_key=turn_key,
        turn_said=turn_said, forder=_order(base.forder, new_ids, ids), torder=_order(base.torder, turn_key[t0:], turn_key),
        version=changes[-1].new_version, concepts=concepts, parent=parent, grow=grow,
        concept_centroids=centres, _information={}, states={}, derived={})


def _order(old: Order | None, new: Sequence[Any], every: Sequence[Any]) -> Order:
    if old is None:
        return Order(every)
    return old.add(new, every) if new else old


def _seconds(f: Fact) -> float:
    w = fact_time(f)
    return w.timestamp() if w is not None else float("nan")


def _relate(relations_of: dict[str, list[Relation]], r: Relation) -> None:
    for end in (r.src, r.dst):  # as a rebuild lists them: a relation of a fact with itself twice
        relations_of[end] = [*relations_of.get(end, ()), r]


def _unrelate(relations_of: dict[str, list[Relation]], r: Relation) -> None:
    for end in dict.fromkeys((r.src, r.dst)):
        left = [x for x in relations_of.get(end, ()) if x.key != r.key]
        if left:
            relations_of[end] = left
        else:
            relations_of.pop(end, None)
