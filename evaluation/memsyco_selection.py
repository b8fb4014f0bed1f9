"""Judge-free MemSyco-Bench check of the memory store (Valid Memory Selection, the update task).

Per row: ingest the row's dialogue as its own user (answer keys never reach ingest), retrieve for
the row's question (``k`` seeds + relation traversal), then score against the gold ``memory.items``:

- Matching (documented threshold ``match_threshold`` = 0.45 cosine of L2-normalized MiniLM vectors;
  embeddings, not strings; the answer key is only read here, after ingest). An item is as near a fact as
  the nearer of its whole text and its ';'-separated parts ("We watched a mix of classic and modern horror
  films" is nearer the outdated part "Enjoys watching a mix of classic and modern horror films" than the
  current item, though not nearer the outdated item's whole text).
  ``matching="ordered"`` (the default, revision 14 of docs/results/relations.md): in a row of one outdated
  and one current item, the two facts are the pair of the user's own stored facts with the highest summed
  similarity such that the outdated fact was said in an earlier turn than the current one, each at the
  threshold and nearer its own item than the other. Why: the task defines the outdated item as the view
  held before the change, while a current item often restates the old view ("Prefers documentary content
  over fictional narratives") and a change turn often names it ("I used to avoid film festivals, but now
  I seek them out"); read one at a time, the item's most similar sentence can be the wrong turn's. Against
  the annotated gold turns (``evaluation/annotations/``), 0.96 of the items matched this way lie in an
  annotated turn, 0.89 under ``nearest_item`` (193 rows, cross-validated models). A row with no such
  pair falls back to ``nearest_item`` over the user's facts. ``matching="nearest_item"`` (revisions
  9-13): the most similar fact among those nearer the item than every item of the other status.
  ``matching="greedy"`` (revisions 1-8): the most similar fact to the whole text, the current item
  choosing first, the outdated item may not take the same fact. The ordered rule builds in the turn
  order that the relations also follow, so a wrong-way relation between two other facts could hide
  behind it: the gold-turn figures are the check on both.
- Gold turns (``gold_turns``, on by default for the dev rows): the report gives ``matching_agreement`` and
  the headline figures with each item read through the user's fact of its annotated primary turn most
  similar to it (``gold_turns``): a measurement that no automatic matching decides.
- current_hit: the current item's fact is among the retrieved facts.
- outdated_leak: the outdated item's fact is retrieved and not marked superseded (validity ``current``
  or ``disputed``; ``superseded``, ``expired`` and ``retracted`` count as marked).
- order: the current item's fact ranks above the outdated item's fact if that one leaks (rank = seed
  rank; facts added by traversal rank after all seeds). Rows without a current hit score 0.
Also reported: ``wrong_way`` (the current item's stored fact, retrieved or not, ends up superseded or
disputed: a relation pointing the wrong way or at the wrong fact), ``current_valid`` (the current item's retrieved fact is itself ``current``, i.e. not
wrongly superseded), ``outdated_marked`` (the outdated item's fact was retrieved and arrived marked)
and ``outdated_leak_any``, a stricter leak: items split at ';', and *any* retrieved unmarked fact
that is nearer to an outdated part than to every other part (at the threshold) counts.
``partial_turn_leak`` (rows with annotated gold turns): any retrieved unmarked fact of a stateful kind
(``STATEFUL_KINDS``: not an event or experience, which happened and are never superseded) said in the outdated
item's annotated primary turn counts, whatever the matching picked: the one-fact leak reads one sentence per
item, and a turn that states the old view in three sentences can leak through the other two. A primary turn
that is also annotated for the current item (a change turn naming both views) is left out.
``out_of_order`` (given the facts' turn positions): the outdated item's stored fact is not older than the
current item's (the same turn or a later one: a change turn that names the old view, "I used to avoid film
festivals, but now I seek them out", or the old view recounted after the change). No relation that points
from the later statement to the earlier can mark that fact while the current one stays current, so the
report also gives leak and current-still-current over the rows whose two facts are in order.
Why 0.45: on the dev rows the best-matching stored fact of a gold item scores 0.61 / 0.71 / 0.77
(10th / 50th / 75th percentile) with the offline extractor, while an arbitrary fact of the same dialogue
scores 0.35 at the median; 0.45 accepts every genuine best match and rejects the bulk of same-topic
chatter. It is fixed in advance and not tuned on the score.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from retrieval.retrieve import EvidenceBundle, RetrievalConfig, retrieve
from graph.snapshot import Snapshot
from evaluation.memsyco_annotations import DEFAULT_TURNS, RowTurns, check_against, load_turn_annotations
from induction.adapters import MemsycoRow, load_memsyco
from induction.branch import validity_map
from induction.pipeline import Ingestor, IngestError
from llmclients.embeddings import Embedder

MARKED = frozenset({"superseded", "expired", "retracted"})
# The kinds that hold a state a later statement replaces (partial_turn_leak): events and experiences happened.
STATEFUL_KINDS = frozenset({"preference", "belief", "circumstance", "constraint", "plan"})
Matching = Literal["ordered", "nearest_item", "greedy"]


class _Memo:
    """Embedding cache for one evaluation run: ingest already embedded the statements scoring needs."""

    def __init__(self, inner: Embedder):
        self.inner, self.dim = inner, inner.dim
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for t, v in zip(todo, self.inner.embed(todo)):
                self.cache[t] = np.asarray(v, dtype=np.float32)
        if len(self.cache) > 200_000:
            self.cache.clear()
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)


class MemsycoEvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str = Field(default="valid_memory_selection.jsonl", description="Task file inside the data folder.")
    k: int = Field(default=10, ge=1, le=200, description="Seed facts retrieved per question.")
    match_threshold: float = Field(default=0.45, ge=0.0, le=1.0,
                                   description="Min cosine (MiniLM by default) for a stored fact to match a gold item part.")
    matching: Matching = Field(
        default="ordered", description="How a gold item finds its stored fact: the best pair of user facts with the "
        "outdated one said first (ordered; nearest_item when a row has no such pair), the most similar fact among "
        "those nearer to it than to every item of the other status (nearest_item: revisions 9-13 of "
        "docs/results/relations.md), or the most similar fact, the current item choosing first (greedy: revisions 1-8).")
    gold_turns: str | None = Field(default=str(DEFAULT_TURNS), description="Annotated gold turns (JSON Lines, "
                                   "evaluation/annotations/README.md) for the matching-agreement and gold-turn figures; "
                                   "None to leave them out. Rows without a label are scored without.")
    limit: int | None = Field(default=None, ge=1, description="Score only the first N rows (quick runs).")
    skip: int = Field(default=0, ge=0, description="Leave out the first N rows (e.g. the rows a model was trained on).")


class Judgement(BaseModel):
    """The row's figures once each gold item has its stored fact (see the module docstring)."""
    current_hit: bool = False
    outdated_leak: bool = False
    order: bool = False
    current_valid: bool = False
    outdated_marked: bool = False
    wrong_way: bool = False


class RowResult(BaseModel):
    id: str
    subtype: str | None = None
    current_hit: bool
    outdated_leak: bool
    order: bool
    current_valid: bool
    outdated_marked: bool
    outdated_leak_any: bool = False
    partial_turn_leak: bool | None = Field(default=None, description="A retrieved unmarked fact of a stateful kind said in "
                                           "the outdated item's annotated primary turn (None: the row has no such label).")
    wrong_way: bool = Field(default=False, description="The current item's stored fact is itself superseded or disputed.")
    out_of_order: bool = Field(default=False, description="The outdated item's stored fact is not older than the "
                               "current item's (same turn or later): no later-replaces-earlier relation can mark it.")
    facts: int
    current_fact: str | None = None
    leaked_fact: str | None = None
    leaked_kind: str | None = None
    outdated_fact: str | None = None
    error: str | None = None
    annotated_items: int = Field(default=0, description="Gold items with annotated turns (0: the row has none).")
    matched_in_gold_turn: int | None = Field(default=None, description="Of those, the items whose matched stored fact "
                                             "was said in one of the item's annotated turns.")
    gold_turns: Judgement | None = Field(default=None, description="The row's figures with each item read through the "
                                         "user's fact of its annotated primary turn most similar to it.")


class GoldTurnFigures(BaseModel):
    """The headline figures with every item read through its annotated primary turn: no automatic matching."""
    n_rows: int
    current_hit: float
    outdated_leak: float
    current_valid: float
    wrong_way: float


class MemsycoReport(BaseModel):
    current_hit: float
    outdated_leak: float
    order: float
    n_rows: int
    current_valid: float = 0.0
    outdated_marked: float = 0.0
    outdated_leak_any: float = Field(default=0.0, description="Stricter leak: any retrieved unmarked fact nearest an outdated part.")
    partial_turn_leak: float | None = Field(default=None, description="Partial-turn leak, over the rows with annotated "
                                            "gold turns: any retrieved unmarked fact of a stateful kind said in the "
                                            "outdated item's annotated primary turn.")
    wrong_way: float = Field(default=0.0, description="Rows whose current item's stored fact (retrieved or not) ends up "
                             "non-current (superseded or disputed): a relation pointing the wrong way or at the wrong fact.")
    out_of_order: float = Field(default=0.0, description="Rows whose outdated item's stored fact is not older than "
                                "the current item's: the part of leak and wrong way that the matching, not a "
                                "relation, decides.")
    outdated_leak_in_order: float = Field(default=0.0, description="Outdated leak over the rows that are not out of order.")
    current_valid_in_order: float = Field(default=0.0, description="Current still current over the rows that are not "
                                          "out of order.")
    leak_kinds: dict[str, int] = Field(default_factory=dict, description="Leaking facts by kind: events and experiences "
                                       "are never superseded by design (they happened), states should be.")
    matching_agreement: float | None = Field(default=None, description="Share of annotated gold items whose matched "
                                             "stored fact was said in one of the item's annotated turns.")
    gold_turns: GoldTurnFigures | None = None
    errors: int = 0
    match_threshold: float
    matching: str = "ordered"
    k: int
    extractor: str
    llm_calls_per_session: float = 0.0
    seconds: float = 0.0
    rows: list[RowResult] = Field(default_factory=list)


def match_items(status: Sequence[str], ids: Sequence[str], sims: np.ndarray, threshold: float,
                matching: Matching = "ordered", position: dict[str, int] | None = None,
                eligible: set[str] | None = None) -> dict[int, str]:
    """Gold item index -> the stored fact standing for it (``sims``: facts x items cosines); unmatched
    items are absent. ``position``: each fact's turn index (``ordered`` needs it); ``eligible``: the facts
    that may stand for an item under ``ordered`` (the user's own). See the module docstring for the rules."""
    if matching == "ordered":
        pair = _ordered_pair(status, ids, sims, threshold, position or {}, eligible)
        if pair is not None:
            return pair
        keep = [n for n, i in enumerate(ids) if eligible is None or i in eligible]
        return match_items(status, [ids[n] for n in keep], sims[keep], threshold, "nearest_item")
    best: dict[int, str] = {}
    if matching == "nearest_item":
        for j, st in enumerate(status):
            others = [i for i, o in enumerate(status) if o != st]
            rival = sims[:, others].max(1) if others else np.full(len(ids), -np.inf)
            ok = [n for n in np.argsort(-sims[:, j]) if sims[n, j] >= threshold and sims[n, j] > rival[n]]
            if ok:
                best[j] = ids[int(ok[0])]
        return best
    taken: set[str] = set()  # greedy: current items choose first; an outdated item may not reuse their fact
    for j in sorted(range(len(status)), key=lambda j: status[j] != "current"):
        for n in np.argsort(-sims[:, j]):
            if sims[n, j] < threshold:
                break
            if status[j] == "outdated" and ids[n] in taken:
                continue
            best[j] = ids[n]
            if status[j] == "current":
                taken.add(ids[n])
            break
    return best


def _ordered_pair(status: Sequence[str], ids: Sequence[str], sims: np.ndarray, threshold: float,
                  position: dict[str, int], eligible: set[str] | None) -> dict[int, str] | None:
    """The (outdated, current) pair of facts with the highest summed similarity whose outdated fact is said
    in an earlier turn, each at the threshold and nearer its own item than the other; None when the row is
    not one outdated + one current item or no such pair exists."""
    if sorted(status) != ["current", "outdated"]:
        return None
    jo, jc = status.index("outdated"), status.index("current")
    cand = [n for n, i in enumerate(ids) if i in position and (eligible is None or i in eligible)]
    olds = [n for n in cand if sims[n, jo] >= threshold and sims[n, jo] > sims[n, jc]]
    news = [n for n in cand if sims[n, jc] >= threshold and sims[n, jc] > sims[n, jo]]
    pairs = [(o, c) for o in olds for c in news if position[ids[o]] < position[ids[c]]]
    if not pairs:
        return None
    o, c = max(pairs, key=lambda p: float(sims[p[0], jo] + sims[p[1], jc]))  # ties: the first pair
    return {jo: ids[o], jc: ids[c]}


def _judge(best: dict[int, str], status: Sequence[str], bundle: EvidenceBundle,
           validity: dict[str, str] | None) -> tuple[Judgement, list[str], list[str]]:
    """Figures for one matching, with the retrieved current facts and the leaking ones, best rank first."""
    by_id = {it.fact.fact_id: it for it in bundle.items}
    seed_rank = {s.fact_id: i for i, s in enumerate(bundle.explain.seeds)}

    def rank(fid: str) -> int:
        return seed_rank.get(fid, len(seed_rank))

    cur = sorted({fid for j, fid in best.items() if status[j] == "current" and fid in by_id}, key=rank)
    old = sorted({fid for j, fid in best.items() if status[j] == "outdated" and fid in by_id}, key=rank)
    leaks = [fid for fid in old if by_id[fid].state.validity not in MARKED]
    hit = bool(cur)
    cur_all = {fid for j, fid in best.items() if status[j] == "current"}
    return Judgement(current_hit=hit, outdated_leak=bool(leaks), order=hit and all(rank(cur[0]) < rank(f) for f in leaks),
                     current_valid=any(by_id[f].state.validity == "current" for f in cur),
                     outdated_marked=any(by_id[f].state.validity in MARKED for f in old),
                     wrong_way=any((validity or {}).get(f, "current") in ("superseded", "disputed") for f in cur_all)), cur, leaks


def _gold_match(labels: RowTurns, gold_k: Sequence[int], ids: Sequence[str], sims: np.ndarray,
                position: dict[str, int], eligible: set[str] | None) -> dict[int, str]:
    """Each annotated item's fact: the eligible fact of its primary turn most similar to it (none if that
    turn stored nothing)."""
    best: dict[int, str] = {}
    for lab in labels.items:
        if lab.k not in gold_k:
            continue
        j = gold_k.index(lab.k)
        there = [n for n, i in enumerate(ids) if position.get(i) == lab.primary and (eligible is None or i in eligible)]
        if there:
            best[j] = ids[max(there, key=lambda n: (float(sims[n, j]), -n))]
    return best


def score_row(row: MemsycoRow, bundle: EvidenceBundle, statements: dict[str, str], embed: Callable[[list[str]], np.ndarray],
              threshold: float, validity: dict[str, str] | None = None,
              position: dict[str, int] | None = None, matching: Matching = "ordered",
              holders: dict[str, str] | None = None, labels: RowTurns | None = None) -> RowResult:
    """Score one retrieved bundle against the row's gold items (pure given the embedder). ``position``: each
    fact's turn index in the dialogue (``ordered`` matching, ``out_of_order``, gold turns); ``holders``: each
    fact's holder (only the user's facts may stand for an item under ``ordered`` and gold turns); ``labels``:
    the row's annotated gold turns, if any."""
    gold_k = [k for k, it in enumerate(row.items) if it.status in ("current", "outdated")]
    gold = [row.items[k] for k in gold_k]
    items = [(it.status, it.content) for it in gold]
    parts = [(it.status, p) for it in gold for p in it.parts()]
    ids = list(statements)
    if not items or not ids:
        return RowResult(id=row.id, subtype=row.subtype, current_hit=False, outdated_leak=False, order=False,
                         current_valid=False, outdated_marked=False, facts=len(ids))
    f = embed([statements[i] for i in ids])
    sims = np.asarray(f) @ np.asarray(embed([c for _, c in items])).T  # facts x items
    ps = np.asarray(f) @ np.asarray(embed([p for _, p in parts])).T  # facts x parts
    # an item is as near a fact as the nearer of its whole text and its parts (greedy: whole text only)
    of = np.asarray([j for j, it in enumerate(gold) for _ in it.parts()])
    near = np.stack([np.maximum(sims[:, j], ps[:, of == j].max(1, initial=-1.0)) for j in range(len(items))], axis=1)
    pos = position or {}
    users = None if holders is None else {i for i in ids if holders.get(i) == "user"}
    status = [s for s, _ in items]
    best = match_items(status, ids, sims if matching == "greedy" else near, threshold, matching, pos, users)
    verdict, cur, leaks = _judge(best, status, bundle, validity)
    by_id = {it.fact.fact_id: it for it in bundle.items}
    # Stricter variant: items split at ';' and every retrieved fact nearer an outdated part than to any
    # other part (at the threshold) must arrive marked.
    nearest = {ids[n]: parts[int(np.argmax(ps[n]))][0] for n in range(len(ids)) if ps[n].max() >= threshold}
    leak_any = any(nearest.get(fid) == "outdated" and it.state.validity not in MARKED for fid, it in by_id.items())
    cur_all = {fid for k, fid in best.items() if status[k] == "current"}
    old_all = {fid for k, fid in best.items() if status[k] == "outdated"}
    late = any(pos[o] >= pos[c] for o in old_all & pos.keys() for c in cur_all & pos.keys())
    in_turn, gj, n_labelled, partial = None, None, 0, None
    if labels is not None and pos:
        partial = partial_turn_leak(labels, bundle, pos)
        turns = {gold_k.index(lab.k): set(lab.turns) for lab in labels.items if lab.k in gold_k}
        in_turn = sum(1 for k, fid in best.items() if k in turns and pos.get(fid) in turns[k])
        n_labelled = len(turns)
        gj = _judge(_gold_match(labels, gold_k, ids, near, pos, users), status, bundle, validity)[0]
    return RowResult(id=row.id, subtype=row.subtype, **verdict.model_dump(), out_of_order=late,
                     outdated_leak_any=leak_any, partial_turn_leak=partial, facts=len(ids),
                     current_fact=by_id[cur[0]].fact.statement if cur else None,
                     leaked_fact=by_id[leaks[0]].fact.statement if leaks else None,
                     leaked_kind=by_id[leaks[0]].fact.kind if leaks else None,
                     outdated_fact=next((statements[fid] for k, fid in best.items() if status[k] == "outdated"), None),
                     annotated_items=n_labelled,
                     matched_in_gold_turn=in_turn, gold_turns=gj)


def partial_turn_leak(labels: RowTurns, bundle: EvidenceBundle, position: dict[str, int]) -> bool | None:
    """Any retrieved unmarked fact of a stateful kind said in an outdated item's annotated primary turn (a turn
    also annotated for a current item left out); None when the row labels no outdated item."""
    if not any(lab.status == "outdated" for lab in labels.items):
        return None
    current = {t for lab in labels.items if lab.status == "current" for t in lab.turns}
    old = {lab.primary for lab in labels.items if lab.status == "outdated"} - current
    return any(position.get(it.fact.fact_id) in old and it.fact.kind in STATEFUL_KINDS
               and it.state.validity not in MARKED for it in bundle.items)


def turn_positions(row: MemsycoRow, snap: Snapshot) -> dict[str, int]:
    """Each stored fact's turn index in the row's dialogue (``score_row``'s ``position``)."""
    turn_pos = {row.session.turn_id(i): i for i in range(len(row.session.turns))}
    return {fid: turn_pos[f.source_turn_ids[0]] for fid, f in snap.facts.items()
            if f.source_turn_ids and f.source_turn_ids[0] in turn_pos}


def evaluate_memsyco(data_dir: str | Path, ingestor: Ingestor, cfg: MemsycoEvalConfig | None = None,
                     progress: Callable[[int, int], None] | None = None) -> MemsycoReport:
    cfg = cfg or MemsycoEvalConfig()
    rows = load_memsyco(Path(data_dir) / cfg.file)
    rows = [r for r in rows if r.policy == "update" or any(i.status == "current" for i in r.items)]
    rows = rows[cfg.skip:]
    if cfg.limit:
        rows = rows[: cfg.limit]
    mem = ingestor.memory
    memo = _Memo(mem.embedder)
    saved = mem.embedder
    mem.embedder = memo  # type: ignore[assignment]
    try:
        return _run(rows, ingestor, memo, cfg, progress)
    finally:
        mem.embedder = saved  # type: ignore[assignment]


def _run(rows: list[MemsycoRow], ingestor: Ingestor, memo: _Memo, cfg: MemsycoEvalConfig,
         progress: Callable[[int, int], None] | None) -> MemsycoReport:
    mem = ingestor.memory
    rcfg = RetrievalConfig(k=cfg.k)
    labels = load_turn_annotations(cfg.gold_turns) if cfg.gold_turns else {}
    check_against(rows, labels)
    t0 = time.perf_counter()
    results: list[RowResult] = []
    calls = 0
    for n, row in enumerate(rows):
        try:
            rep = ingestor.ingest(row.session)
            calls += rep.llm_calls
        except IngestError as e:
            results.append(RowResult(id=row.id, subtype=row.subtype, current_hit=False, outdated_leak=False, order=False,
                                     current_valid=False, outdated_marked=False, facts=0, error=str(e)))
            if progress:
                progress(n + 1, len(rows))
            continue
        user = row.session.user_id
        qv = mem.embedder.embed([row.question])[0]
        bundle = retrieve(mem.store, user, row.question, qv.tolist(), rcfg)
        snap = mem.store.load_snapshot(user)
        statements = {fid: f.statement for fid, f in snap.facts.items()}
        validity = validity_map(snap, list(snap.facts))
        results.append(score_row(row, bundle, statements, memo.embed, cfg.match_threshold, validity,
                                 turn_positions(row, snap), cfg.matching,
                                 {fid: f.holder for fid, f in snap.facts.items()}, labels.get(row.id)))
        if progress:
            progress(n + 1, len(rows))
    ok = results
    n_rows = len(ok)

    def mean(attr: str, among: list[RowResult] | None = None) -> float:
        rs = ok if among is None else among
        return round(sum(getattr(r, attr) for r in rs) / len(rs), 4) if rs else 0.0

    in_order = [r for r in ok if not r.out_of_order]
    labelled = [r for r in ok if r.annotated_items]
    gj = [r.gold_turns for r in labelled if r.gold_turns is not None]

    def share(attr: str) -> float:
        return round(sum(getattr(g, attr) for g in gj) / len(gj), 4)

    gold = GoldTurnFigures(n_rows=len(gj), current_hit=share("current_hit"), outdated_leak=share("outdated_leak"),
                           current_valid=share("current_valid"), wrong_way=share("wrong_way")) if gj else None
    agree = (round(sum(r.matched_in_gold_turn or 0 for r in labelled) / sum(r.annotated_items for r in labelled), 4)
             if labelled else None)

    turn_rows = [r for r in ok if r.partial_turn_leak is not None]
    return MemsycoReport(current_hit=mean("current_hit"), outdated_leak=mean("outdated_leak"), order=mean("order"),
                         n_rows=n_rows, current_valid=mean("current_valid"), outdated_marked=mean("outdated_marked"),
                         outdated_leak_any=mean("outdated_leak_any"), wrong_way=mean("wrong_way"),
                         partial_turn_leak=mean("partial_turn_leak", turn_rows) if turn_rows else None,
                         out_of_order=mean("out_of_order"), outdated_leak_in_order=mean("outdated_leak", in_order),
                         current_valid_in_order=mean("current_valid", in_order),
                         leak_kinds=dict(Counter(r.leaked_kind for r in ok if r.leaked_kind).most_common()),
                         matching_agreement=agree, gold_turns=gold,
                         errors=sum(1 for r in results if r.error), match_threshold=cfg.match_threshold,
                         matching=cfg.matching, k=cfg.k,
                         extractor=ingestor.extractor.name, llm_calls_per_session=round(calls / max(1, n_rows), 3),
                         seconds=round(time.perf_counter() - t0, 2), rows=results)
