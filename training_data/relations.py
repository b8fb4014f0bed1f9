"""Training pairs for the relation model (induction/relations/): dialogue -> (features, label) rows.

Every source is run through the same offline extractor and the same candidate selection as ingest
(earlier facts from another turn, cosine >= ``min_similarity``, the ``max_candidates`` closest), so the
model is trained on the pairs it will be asked about. Only the labelling differs per source:

- synthetic (training_data/relations_synthetic.py): the planted turn pairs; everything else unrelated.
- MemSyco valid_memory_selection: a fact close to the *current* gold item, later than a fact close to
  the *outdated* item -> supersedes; the reverse order (an old preference restated) -> unrelated;
  pairs far from both gold items -> unrelated; anything in between is left out (unknown).
- MemSyco memory_evidence_conflict: the user's preference facts vs the excerpt closest to the rubric's
  decisive evidence -> conflicts_with; vs the preference-supporting excerpt -> unrelated.
- MemSyco scope / personalized use / objective judgment: the gold item must stay current, so every
  pair touching its facts is unrelated (a later situation does not replace a scoped preference).
- LoCoMo sessions: unrelated (few real updates; a capped sample, the price of some label noise).

Gold items and rubric fields are answer keys: they label the pairs here and never reach ingest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from induction.adapters import load_locomo, load_memsyco
from induction.extract import CandidateFact
from induction.offline import NEGATION, OfflineExtractor, plain
from induction.relations.features import (LABELS, SHIFT, STRUCT_NAMES, FactView, PairContext, pair_features,
                                          turn_overlap, turn_ranks, turn_shift)
from induction.resolve import embedding_text, normalize_text
from induction.session import Session
from training_data.relations_synthetic import synthetic_dialogues

Embed = Callable[[Sequence[str]], np.ndarray]
Labeler = Callable[[int, int], "str | None"]
PairFilter = Callable[[list[CandidateFact], int, int, PairContext], bool]
# files whose dialogues state no change of mind (the gold item is "active", the policy "use" / "constrain_to_scope")
NO_CHANGE_TASKS = frozenset({"personalized_memory_use", "contextual_scope_control"})
IN_SESSION = STRUCT_NAMES.index("in_session")
MEMSYCO_TASKS = ("valid_memory_selection", "memory_evidence_conflict", "contextual_scope_control",
                 "personalized_memory_use", "objective_fact_judgment")


@dataclass
class PairSet:
    X: list[np.ndarray] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    group: list[str] = field(default_factory=list)  # the dialogue (MemSyco row id) a pair comes from
    source: list[str] = field(default_factory=list)
    text: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: PairSet) -> None:
        for a in ("X", "y", "group", "source", "text"):
            getattr(self, a).extend(getattr(other, a))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.stack(self.X).astype(np.float32), np.asarray(self.y, dtype=np.int64)


def fact_view(c: CandidateFact, turn_change: bool = False) -> FactView:
    return FactView(statement=embedding_text(c), kind=c.kind, holder=c.holder, change="change" in c.cues,
                    negation="negation" in c.cues, scoped=c.scope is not None, turn_change=turn_change)


def changed_turns(facts: Sequence[CandidateFact]) -> set[str]:
    """Turns (first source turn id) of which some fact carries a change cue or a turn-level shift phrase."""
    return {c.source_turn_ids[0] for c in facts if "change" in c.cues or turn_shift(c.statement)}


def dialogue_facts(session: Session, extractor: OfflineExtractor, embed: Embed) -> tuple[list[CandidateFact], np.ndarray]:
    """The session's facts in time order (text duplicates of the same holder dropped, as resolve does)."""
    facts, vecs, _ = session_facts([session], extractor, embed)
    return facts, vecs


def session_facts(sessions: Sequence[Session], extractor: OfflineExtractor, embed: Embed
                  ) -> tuple[list[CandidateFact], np.ndarray, list[int]]:
    """The facts of several sessions of one user, each session extracted on its own (as ingest does), in session
    then time order, with each fact's session index (text duplicates of the same holder dropped, as resolve does:
    a repeat in a later session is a duplicate of the stored fact)."""
    seen: set[tuple[str, str]] = set()
    keep: list[CandidateFact] = []
    sess: list[int] = []
    for k, session in enumerate(sessions):
        for c in sorted(extractor.extract(session).facts, key=lambda c: c.order):
            key = (c.holder, normalize_text(c.statement))
            if key not in seen:
                seen.add(key)
                keep.append(c)
                sess.append(k)
    vecs = np.asarray(embed([embedding_text(c) for c in keep]), dtype=np.float32) if keep else np.zeros((0, 1), np.float32)
    return keep, vecs, sess


def candidate_pairs(facts: Sequence[CandidateFact], vecs: np.ndarray, min_similarity: float,
                    max_candidates: int, session_of: Sequence[int] | None = None) -> list[tuple[int, int, PairContext]]:
    """(new, older partner, context) as ingest forms them: earlier facts of another turn, closest first.
    ``session_of``: each fact's session; a partner from an earlier session is a stored fact at ingest
    (``in_session`` 0), one of the same session a fact of the batch (1). None: one session."""
    sims = vecs @ vecs.T if len(facts) else np.zeros((0, 0))
    turn = [c.source_turn_ids[0] if c.source_turn_ids else "" for c in facts]
    members: dict[str, list[int]] = {}
    for i, t in enumerate(turn):
        members.setdefault(t, []).append(i)
    overlap: dict[tuple[str, str], float] = {}
    out: list[tuple[int, int, PairContext]] = []
    for i, c in enumerate(facts):
        cands = [j for j in range(i) if turn[j] != turn[i] and sims[i, j] >= min_similarity]
        cands.sort(key=lambda j: -sims[i, j])
        cands = cands[:max_candidates]
        for t in {turn[j] for j in cands}:
            if (turn[i], t) not in overlap:
                overlap[turn[i], t] = turn_overlap(vecs[members[turn[i]]], vecs[members[t]])
        ranks = turn_ranks({turn[j]: overlap[turn[i], turn[j]] for j in cands})
        for rank, j in enumerate(cands):
            out.append((i, j, PairContext(similarity=float(sims[i, j]), rank=rank, n_candidates=len(cands),
                                          same_concept=facts[j].concept == c.concept,
                                          near_concept=facts[j].concept[:1] == c.concept[:1],
                                          in_session=session_of is None or session_of[i] == session_of[j],
                                          turn_sim=overlap[turn[i], turn[j]], turn_rank=ranks[turn[j]],
                                          n_turns=len(ranks))))
    return out


def label_dialogue(session: Session | Sequence[Session], labeler_of: Callable[[list[CandidateFact], np.ndarray], Labeler],
                   group: str, source: str, extractor: OfflineExtractor, embed: Embed, pair_embedding: bool,
                   min_similarity: float, max_candidates: int, keep: PairFilter | None = None,
                   split_copy: bool = False) -> PairSet:
    """The labelled candidate pairs of one user's dialogue: one session, or several (each extracted on its own;
    a pair across two sessions has ``in_session`` 0, as a stored partner has at ingest). ``keep``: which pairs
    to label at all. ``split_copy``: the dialogue is one session (MemSyco), but the change it states could as
    well arrive in a later session: every pair that crosses the turn of the first ``supersedes`` pair's newer
    fact is added once more as that later session would give it (``in_session`` 0; candidates, ranks, turns and
    labels are the same, the older facts being earlier either way)."""
    sessions = [session] if isinstance(session, Session) else list(session)
    facts, vecs, sess = session_facts(sessions, extractor, embed)
    out = PairSet()
    if len(facts) < 2:
        return out
    lab = labeler_of(facts, vecs)
    chg = changed_turns(facts)
    views = [fact_view(c, c.source_turn_ids[0] in chg) for c in facts]
    rows: list[tuple[int, int, PairContext, str]] = []
    for i, j, ctx in candidate_pairs(facts, vecs, min_similarity, max_candidates, sess if len(sessions) > 1 else None):
        if keep is not None and not keep(facts, i, j, ctx):
            continue
        y = lab(i, j)
        if y is not None:
            rows.append((i, j, ctx, y))
    if split_copy:
        firsts = [facts[i].order for i, _, _, y in rows if y == "supersedes"]
        if firsts:
            at = min(firsts)[0]  # the turn seq the later session would start with
            rows += [(i, j, replace(ctx, in_session=False), y) for i, j, ctx, y in rows
                     if ctx.in_session and facts[i].order[0] >= at > facts[j].order[0]]
    for i, j, ctx, y in rows:
        out.X.append(pair_features(views[i], views[j], ctx, vecs[i], vecs[j], pair_embedding))
        out.y.append(LABELS.index(y))
        out.group.append(group)
        out.source.append(source)
        out.text.append((facts[i].statement, facts[j].statement))
    return out


def in_session(x: np.ndarray) -> bool:
    """The ``in_session`` feature of a pair's row (1: both facts of one session)."""
    return bool(x[IN_SESSION] > 0.5)


# ---------------------------------------------------------------- labelers
def synthetic_labeler(rel: dict[tuple[int, int], str]) -> Callable[[list[CandidateFact], np.ndarray], Labeler]:
    def make(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
        turn = [int(c.order[0]) for c in facts]
        return lambda i, j: rel.get((turn[i], turn[j]), "unrelated")
    return make


def _near(vecs: np.ndarray, item_vecs: np.ndarray, facts: list[CandidateFact], threshold: float,
          holders: Callable[[str], bool]) -> tuple[list[set[int]], np.ndarray]:
    """Per gold item: facts at/above ``threshold`` (plus the single best one), among allowed holders."""
    sims = vecs @ item_vecs.T if len(vecs) else np.zeros((0, len(item_vecs)))
    ok = np.array([holders(c.holder) for c in facts])
    sets: list[set[int]] = []
    for k in range(item_vecs.shape[0]):
        col = np.where(ok, sims[:, k], -1.0)
        if not len(col) or col.max() < 0.40:
            sets.append(set())
            continue
        # The best match (what the eval scores) and near-ties of it: the facts that state the item.
        best = float(col.max())
        top = [int(n) for n in np.argsort(-col)[:3] if col[n] >= max(threshold, best - 0.08)]
        sets.append({int(np.argmax(col)), *top})
    return sets, sims


def vms_labeler(items: Sequence[tuple[str, str]], embed: Embed, near: float, far: float, continuations: bool = False,
                nearest_item: bool = True) -> Callable[[list[CandidateFact], np.ndarray], Labeler]:
    """``nearest_item``: a fact near both a current and an outdated item stands for the one it is nearer to
    (as the eval's matching); off, it stands for the current item. A current item often restates the old
    view it replaces ("prefers documentaries over fiction"), so the old sentence it names was counted as
    current and the pair that replaces it was never a positive."""
    iv = np.asarray(embed([t for _, t in items]), dtype=np.float32)

    def make(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
        sets, sims = _near(vecs, iv, facts, near, lambda h: h == "user")
        cur = set().union(*[s for s, (st, _) in zip(sets, items) if st == "current"])
        old = set().union(*[s for s, (st, _) in zip(sets, items) if st == "outdated"])
        top = sims.max(axis=1) if sims.size else np.zeros(len(facts))
        is_old = np.array([st == "outdated" for st, _ in items])
        top_old = sims[:, is_old].max(axis=1) if sims.size and is_old.any() else np.zeros(len(facts))
        if nearest_item and sims.size and is_old.any() and (~is_old).any():
            top_cur = sims[:, ~is_old].max(axis=1)
            cur, old = {n for n in cur if top_cur[n] > top_old[n]}, {n for n in old if top_old[n] >= top_cur[n]}
        old -= cur
        old_turns = {facts[n].source_turn_ids[:1][0] for n in old if facts[n].source_turn_ids}

        def lab(i: int, j: int) -> str | None:
            if i in cur and j in old:
                return "supersedes"
            if i in old and j in cur:
                return "unrelated"  # an old preference restated later does not flip the newer one
            if top[i] < far and top[j] < far:
                return "unrelated"
            if (i in cur or i in old) and top[j] < far:
                return "unrelated"
            if (continuations and facts[i].holder == facts[j].holder == "user" and j not in old
                    and facts[j].source_turn_ids[:1][0] not in old_turns and top_old[j] < near):
                # the older statement is in no turn the change replaces (often the turn stating the current
                # view): whatever comes later builds on it or moves on, it does not make it untrue
                return "unrelated"
            return None
        return lab
    return make


def conflict_labeler(pref: str, decisive: str, supporting: str, embed: Embed, near: float, far: float
                     ) -> Callable[[list[CandidateFact], np.ndarray], Labeler]:
    pv = np.asarray(embed([pref]), dtype=np.float32)
    ev = np.asarray(embed([decisive, supporting or decisive]), dtype=np.float32)

    def make(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
        (prefs,), psims = _near(vecs, pv, facts, near, lambda h: h == "user")
        (dec, sup), esims = _near(vecs, ev, facts, 0.6, lambda h: h != "user")
        sup = sup - dec if supporting else set()
        pref_top = psims[:, 0] if psims.size else np.zeros(len(facts))
        dec_top = esims[:, 0] if esims.size else np.zeros(len(facts))

        def lab(i: int, j: int) -> str | None:
            a, b = (i, j) if i in prefs else (j, i)
            if a in prefs and b in dec:
                return "conflicts_with"
            if a in prefs and b in sup:
                return "unrelated"
            if a in prefs and facts[b].holder != "user" and dec_top[b] < far:
                return "unrelated"
            if pref_top[i] < far and pref_top[j] < far and dec_top[i] < far and dec_top[j] < far:
                return "unrelated"
            return None
        return lab
    return make


def keep_current_labeler(items: list[str], embed: Embed, near: float, far: float, every_pair: bool = False
                         ) -> Callable[[list[CandidateFact], np.ndarray], Labeler]:
    """``every_pair``: the dialogue states no change at all (a preference grown out of experiences, a scoped
    preference among situations), so every pair is unrelated: a later "so now I'm on a journey to…" builds on
    the experience before it, it does not replace it."""
    iv = np.asarray(embed(items), dtype=np.float32)

    def make(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
        sets, sims = _near(vecs, iv, facts, near, lambda h: h == "user")
        gold = set().union(*sets)
        top = sims.max(axis=1) if sims.size else np.zeros(len(facts))
        return lambda i, j: "unrelated" if (every_pair or i in gold or j in gold or (top[i] < far and top[j] < far)) else None
    return make


def all_unrelated(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
    return lambda i, j: "unrelated"


# ---------------------------------------------------------------- sources
def _rubric(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rub = (r.get("evaluation") or {}).get("rubric") or {}
            out[r["id"]] = {k: str(rub.get(k) or "") for k in ("decisive_evidence", "supporting_evidence",
                                                                  "preference_supporting_evidence")}
    return out


def memsyco_pairs(root: str | Path, embed: Embed, extractor: OfflineExtractor, pair_embedding: bool,
                  min_similarity: float, max_candidates: int, near: float = 0.5, far: float = 0.35,
                  tasks: Sequence[str] = MEMSYCO_TASKS, max_rows: int | None = None,
                  heldout: tuple[int, int] | None = None, continuations: bool = False,
                  nearest_item: bool = True, split: bool = False) -> PairSet:
    """``heldout = (a, b)``: rows a..b-1 of every task file are never used (the block the evals report on).
    ``split``: a valid-memory row's pairs across its change turn once more as if that turn came in a later
    session (``label_dialogue``'s ``split_copy``).
    ``continuations``: also label, as unrelated, every pair of the no-change files (personalized use, scope)
    and every pair of a valid-memory row whose older side is in no turn the change replaces."""
    out = PairSet()
    root = Path(root)
    for task in tasks:
        path = root / f"{task}.jsonl"
        if not path.is_file():
            continue
        rows = load_memsyco(path, user_prefix=f"rel-{task}-")
        if heldout is not None:
            rows = rows[: heldout[0]] + rows[heldout[1]:]
        rows = rows[:max_rows] if max_rows else rows
        rub = _rubric(path) if task == "memory_evidence_conflict" else {}
        for row in rows:
            labeler_of: Callable[[list[CandidateFact], np.ndarray], Labeler]
            if task == "valid_memory_selection":
                # each ';'-separated part too: a long outdated item is several sentences of the dialogue, and
                # every one of them is a fact the change replaces (one positive per row was too few)
                items = [(i.status, t) for i in row.items if i.status in ("current", "outdated")
                         for t in dict.fromkeys([i.content, *i.parts()])]
                if not any(s == "current" for s, _ in items):
                    continue
                labeler_of = vms_labeler(items, embed, near, far, continuations, nearest_item)
            elif task == "memory_evidence_conflict":
                r = rub.get(row.id, {})
                dec = r.get("decisive_evidence") or r.get("supporting_evidence") or ""
                if not dec or not row.items:
                    continue
                labeler_of = conflict_labeler(row.items[0].content, dec, r.get("preference_supporting_evidence", ""),
                                              embed, near, far)
            else:
                labeler_of = keep_current_labeler([i.content for i in row.items], embed, near, far,
                                                  every_pair=continuations and task in NO_CHANGE_TASKS)
            out.add(label_dialogue(row.session, labeler_of, row.id, f"memsyco/{task}", extractor, embed, pair_embedding,
                                   min_similarity, max_candidates,
                                   split_copy=split and task == "valid_memory_selection"))
    return out


def locomo_pairs(path: str | Path, embed: Embed, extractor: OfflineExtractor, pair_embedding: bool,
                 min_similarity: float, max_candidates: int, max_pairs: int, max_sessions: int = 4,
                 skip_sessions: int = 0, max_shift_pairs: int = 0, max_cross_pairs: int = 0) -> PairSet:
    """Sessions ``skip_sessions`` .. ``skip_sessions + max_sessions - 1`` of every conversation, all unrelated:
    every pair until ``max_pairs``, then only pairs whose newer statement says "now" / "lately" / "these days"
    (a progress report or an elaboration, LoCoMo's usual shape; the model read them as changes) until
    ``max_shift_pairs`` more. Skipping the first sessions keeps the LoCoMo edge audit (sessions 1-10) unseen.

    ``max_cross_pairs`` > 0: each conversation's sessions are one user's history, ingested session by session,
    so a fact's candidates include the earlier sessions' facts (``in_session`` 0); besides the pairs above
    (within a session), up to ``max_cross_pairs`` (shared evenly by the conversations, a seeded hash sample) pairs
    of the same speaker across two sessions, unrelated: LoCoMo states almost no change of mind (a hand scan of a
    conversation: docs/results/relations-locomo-edges.md), and every LoCoMo edge ever audited joined two sessions."""
    out, shift, n_cross = PairSet(), 0, 0
    convs = load_locomo(path, user_prefix="rel-locomo-")
    per_conv = -(-max_cross_pairs // max(1, len(convs)))
    for conv in convs:
        sessions = conv.sessions[skip_sessions: skip_sessions + max_sessions]
        if max_cross_pairs:
            hist = label_dialogue(sessions, all_unrelated, f"locomo/{conv.sample_id}", "locomo", extractor, embed,
                                  pair_embedding, min_similarity, max_candidates,
                                  keep=lambda f, i, j, ctx: ctx.in_session or f[i].holder == f[j].holder)
            cross = sorted((n for n in range(len(hist.y)) if not in_session(hist.X[n])),
                           key=lambda n: hashlib.sha256("\x1f".join(hist.text[n]).encode()).hexdigest())[:per_conv]
            _take(out, hist, sorted(cross))
            n_cross += len(cross)
            parts: list[PairSet | Session] = [_subset(hist, [n for n in range(len(hist.y)) if in_session(hist.X[n])])]
        else:
            parts = list(sessions)
        for part in parts:
            if len(out.y) - n_cross >= max_pairs and shift >= max_shift_pairs and not max_cross_pairs:
                return out
            ps = part if isinstance(part, PairSet) else label_dialogue(
                part, all_unrelated, f"locomo/{conv.sample_id}", "locomo", extractor, embed, pair_embedding,
                min_similarity, max_candidates)
            for n in range(len(ps.y)):
                if len(out.y) - n_cross - shift >= max_pairs:  # the general sample is full: "now" pairs only
                    if shift >= max_shift_pairs or not (SHIFT.search(ps.text[n][0]) or turn_shift(ps.text[n][0])):
                        continue
                    shift += 1
                _take(out, ps, [n])
    return out


def _take(out: PairSet, ps: PairSet, rows: Sequence[int]) -> None:
    for n in rows:
        for a in ("X", "y", "group", "source", "text"):
            getattr(out, a).append(getattr(ps, a)[n])


def _subset(ps: PairSet, rows: Sequence[int]) -> PairSet:
    out = PairSet()
    _take(out, ps, rows)
    return out


def synthetic_pairs(n: int, seed: int, embed: Embed, extractor: OfflineExtractor, pair_embedding: bool,
                    min_similarity: float, max_candidates: int, lookalikes: bool = False, people: int = 0) -> PairSet:
    out = PairSet()
    for d in synthetic_dialogues(n, seed, lookalikes, people):
        out.add(label_dialogue(d.session, synthetic_labeler(d.relations), f"synthetic/{d.family}/{d.session.session_id}",
                               f"synthetic/{d.family}", extractor, embed, pair_embedding, min_similarity, max_candidates))
    return out


def data_hash(ps: PairSet) -> str:
    h = hashlib.sha256()
    for (a, b), y, g in zip(ps.text, ps.y, ps.group):
        h.update(f"{g}\x1f{a}\x1f{b}\x1f{y}\n".encode())
    return h.hexdigest()


def negated(text: str) -> bool:
    return bool(NEGATION.search(plain(text)))
