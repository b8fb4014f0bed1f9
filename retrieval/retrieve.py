"""Seed retrieval + relation traversal (§3.4 / B.4 of the EvoMemState paper).

K seeds come from several routes fused by weighted reciprocal rank (retrieval/seeds/: fact dense on the
retrieval vector, fact BM25, turn dense and BM25 mapped to their facts, concept, entity, time) when
the caller passes the user's RouteIndex; without one, from the store's own vector and text search
(identity vectors), as before. ``explain`` keeps every route's rank per seed. Traversal then follows
SUPERSEDES and CONFLICTS_WITH in both directions until closure, so an update or a conflict never
arrives without its counterpart. Facts reached from several seeds appear once.

The request itself adjusts two things (retrieval/seeds/breadth.py): one whose evidence is partly the
assistant's (a summary, "what did you recommend") weighs the assistant's facts like the user's, and one
that spans the conversation gets each long fact's most informative words as its ``brief`` line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

import numpy as np

from retrieval.evidence import EvidenceBundle as EvidenceBundle
from retrieval.evidence import EvidenceItem as EvidenceItem
from retrieval.evidence import Explain as Explain
from retrieval.evidence import SeedHit as SeedHit
from graph.models import Fact, Relation, RelationalState, utcnow
from retrieval.seeds.breadth import asks_for_gist, asks_for_several, draws_on_assistant, informative_window, spans_conversation
from retrieval.seeds.index import InformationMeasure, RouteIndex
from retrieval.seeds.model import ConceptPaths
from retrieval.seeds.rank import DEFAULT_ROUTE_WEIGHTS, INSTRUCTION_LIMIT, ROUTES, SECOND_PASS, RouteContext, RouteName
from graph.rules import derive_state
from graph.store import GraphStore, Subgraph
from retrieval.fusion import Rrf as Rrf
from retrieval.fusion import IndexFusion
from retrieval.fusion import diversify as diversify
from retrieval.fusion import fuse_routes as fuse_routes
from retrieval.fusion import rrf_fuse as rrf_fuse

RequestKind = Literal["gist", "several", "narrow"]


def concept_for_several() -> dict[RequestKind, tuple[RouteName, ...]]:
    """The default ``routes_off_for``: the concept route runs only for a request that asks for several things."""
    return {"gist": ("concept",), "narrow": ("concept",), "several": ()}


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(default=10, ge=1, le=1000, description="Number of seed facts (the neighbour route adds its new ones on top).")
    dense_candidates: int = Field(default=50, ge=1, description="Vector hits considered before fusion.")
    text_candidates: int = Field(default=50, ge=0, description="BM25/full-text hits considered before fusion (0 = off).")
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal-rank-fusion constant.")
    traverse: bool = Field(default=True, description="Follow SUPERSEDES/CONFLICTS_WITH to closure (ablation switch).")
    max_hops: int = Field(default=6, ge=1, le=32, description="Hops per traversal query; the loop repeats to closure.")
    max_facts: int = Field(default=500, ge=1, description="Safety cap on facts gathered by traversal.")
    update_turns: bool = Field(default=True, description=(
        "Hand on the whole source turn of each update in the bundle (a fact that SUPERSEDES another), with "
        "the turn's facts' own partners: a change is often said over several sentences (\"I've been going to "
        "the arthouse instead. The discussions after the films are deeper.\") and the update is one of them "
        "(docs/results/relations.md, revision 12). Needs ``traverse``."))
    routes: tuple[RouteName, ...] = Field(default=ROUTES, description="Seed routes fused when a RouteIndex is given "
                                          "(ablation: leave one out).")
    route_weights: dict[str, float] = Field(default_factory=dict, description="Per-route RRF weight (default 1.0).")
    route_candidates: int = Field(default=50, ge=1, description="Facts each route contributes before fusion.")
    instruction_limit: int = Field(default=INSTRUCTION_LIMIT, ge=0, description=(
        "Standing instructions the instruction route hands on per request, nearest first: five short lines "
        "are about a sixth of a 600-token context."))
    holder_weights: dict[str, float] = Field(default_factory=lambda: {"assistant": 0.5}, description=(
        "Fused-score factor by fact holder: what the assistant said counts as evidence but ranks below "
        "what the user said at equal route support, so assistant chatter cannot crowd out user facts."))
    broad_holder_weights: dict[str, float] = Field(default_factory=lambda: {"assistant": 1.0}, description=(
        "Holder factors that replace ``holder_weights`` entries for a request whose evidence is partly the "
        "assistant's (retrieval/seeds/breadth.py: a broad one, or one about what the assistant said): in a "
        "working conversation half a summary's turns are the assistant's (BEAM at 600 tokens: coverage "
        "0.741 -> 0.757, complete 0.595 -> 0.609; LoCoMo: 2 of 883 requests match)."))
    turn_redundancy: float = Field(default=0.5, gt=0, le=1, description=(
        "Fused-score factor per better-ranked seed citing the same source turn (1 = off): a turn's "
        "second and third facts add words, not evidence, so other turns get their slots first."))
    question_weight: float = Field(default=1.0, gt=0, le=1, description=(
        "Fused-score factor for a fact that is a question (ends with '?'); off by default: 0.5 gained "
        "LoCoMo 0.002 complete but cost BEAM 0.05, whose users' questions are the evidence."))
    min_information: float = Field(default=0.0, ge=0, description=(
        "A fact whose content words sum to less IDF (holder's name left out) than this share of the "
        "user's median fact keeps only its proportion of its fused score (0 = off): a near-empty line "
        "like 'It was so fun!' lands close to any request naming its speaker, yet tells nothing. Off by "
        "default: at 0.55 (LoCoMo +0.005 complete) it also pushed a terse, specific fact ('Is "
        "vegetarian') out of the top 2 for 'What should I cook for dinner?' with MiniLM."))
    feedback_weight: float = Field(default=0.0, ge=0, description=(
        "Fusion weight of a second-hop dense pass from the request moved toward the first pass's best "
        "seeds (0 = off): multi-hop questions need several facts about one subject, and the ones that "
        "do not share the request's words share the seeds' subject."))
    feedback_seeds: int = Field(default=5, ge=1, description="Best first-pass seeds the second hop starts from.")
    information_measure: InformationMeasure = Field(default="sum", description=(
        "What ``min_information`` compares: the summed IDF of a fact's content words ('sum') or the IDF "
        "of its rarest one ('max', which does not starve terse, specific facts)."))
    neighbour_seeds: int = Field(default=5, ge=0, description=(
        "Best first-pass seeds whose surrounding turns the neighbour route hands on: a question names "
        "the setup and the answer follows it, so the first few seeds' surroundings are worth a rank."))
    neighbour_span: int = Field(default=2, ge=1, le=8, description=(
        "Places before and after a seed's turn, in its session, that the neighbour route reads (2: the "
        "reply and the speaker's own next turn in a two-party chat)."))
    broad_line_words: int = Field(default=6, ge=0, description=(
        "For a request that spans the conversation (a summary, an order, a development: retrieval/seeds/"
        "breadth.py), each fact longer than this is written in the compact context as its most informative "
        "window of this many words, so the many turns such a request needs fit its budget (0 = off). BEAM "
        "at 600 tokens: coverage 0.739 -> 0.757, answer-token recall 0.671 -> 0.659 (10 words); with one line "
        "per moment (the gist route, retrieval/seeds/arc.py) 6 words against 10 raised summarization and "
        "event-ordering coverage on BEAM dev (docs/results/concept-route.md); LoCoMo: 2 of 883 match."))
    several_line_words: int = Field(default=0, ge=0, description=(
        "For a request that asks for several things (retrieval/seeds/breadth.py: asks_for_several; a request "
        "that spans the conversation takes ``broad_line_words``), each fact longer than this is written as its "
        "most informative window of this many words, so more of the set's members fit the budget (0 = off)."))
    routes_off_for: dict[Literal["gist", "several", "narrow"], tuple[RouteName, ...]] = Field(
        default_factory=lambda: concept_for_several(), description=(
            "Routes left out for one kind of request, told apart by its wording: 'gist' for a request that "
            "wants a topic's arc (retrieval/seeds/breadth.py: asks_for_gist), 'several' for one that asks for "
            "several things (asks_for_several: a list, a plural what / which, a count, what both share), "
            "'narrow' for any other ('several' takes the 'narrow' entry when it has none of its own). A route "
            "is kept for the kinds of request where leaving it out costs; by default the concept route runs for "
            "'several' alone (docs/results/concept-route.md)."))
    session_redundancy: float = Field(default=1.0, gt=0, le=1, description=(
        "Fused-score factor per better-ranked seed from the same session (1 = off): evidence that spans "
        "sessions (multi-hop questions) is not crowded out by one session's near-duplicates."))

    def holder_weight(self, holder: str | None) -> float:
        """The fused-score factor of a fact held by ``holder`` (None: the user, the common case)."""
        return self.holder_weights.get(holder or "user", 1.0)

    def for_request(self, query: str) -> RetrievalConfig:
        """This configuration as it applies to ``query``: without the routes ``routes_off_for`` leaves out
        for its kind; a request that draws on the assistant's words (``draws_on_assistant``) takes
        ``broad_holder_weights``."""
        cfg = self
        off: tuple[RouteName, ...] = ()
        if self.routes_off_for:
            kind = request_kind(query)
            off = self.routes_off_for.get(kind, self.routes_off_for.get("narrow", ()) if kind == "several" else ())
        if set(off) & set(self.routes):
            cfg = cfg.model_copy(update={"routes": tuple(r for r in self.routes if r not in off)})
        if not self.broad_holder_weights or not draws_on_assistant(query):
            return cfg
        return cfg.model_copy(update={"holder_weights": self.holder_weights | self.broad_holder_weights})


def request_kind(query: str) -> Literal["gist", "several", "narrow"]:
    """The kind of request ``routes_off_for`` keys on: an arc, several things, or one thing."""
    return "gist" if asks_for_gist(query) else "several" if asks_for_several(query) else "narrow"


def route_seeds(index: RouteIndex, query: str, query_embedding: Sequence[float] | None, cfg: RetrievalConfig,
                allowed_ids: frozenset[str] | None = None) -> tuple[list[SeedHit], dict[str, float]]:
    """Seeds from every configured route, fused; also each route's time in ms."""
    allowed = None if allowed_ids is None else np.array([i in allowed_ids for i in index.ids], dtype=bool)
    qv = None if query_embedding is None else np.asarray(query_embedding, dtype=np.float32)
    ctx = RouteContext(index, query, qv, allowed, cfg.route_candidates, resolve_references="context" in cfg.routes,
                       instruction_limit=cfg.instruction_limit)
    hits: dict[str, list[tuple[str, float, int]]] = {}
    ms: dict[str, float] = {}
    for name in cfg.routes:
        if name in SECOND_PASS:
            continue
        t = time.perf_counter()
        hits[name] = ctx.run(name)
        ms[f"route_{name}"] = (time.perf_counter() - t) * 1e3
    fusion = IndexFusion(index)
    for route, lst in hits.items():
        fusion.add(route, lst)

    def prior(fids: Iterable[str]) -> dict[str, float]:
        return content_prior(index, fids, cfg)

    holders = holder_factors(index, cfg)
    seeds = fusion.fuse(cfg, cfg.k, prior, holders)
    if cfg.feedback_weight > 0 and seeds:
        t = time.perf_counter()
        hits["feedback"] = ctx.feedback([index.row[s.fact_id] for s in seeds[: cfg.feedback_seeds]])
        fusion.add("feedback", hits["feedback"])
        ms["route_feedback"] = (time.perf_counter() - t) * 1e3
        cfg = cfg.model_copy(update={"route_weights": {"feedback": cfg.feedback_weight} | cfg.route_weights})
        seeds = fusion.fuse(cfg, cfg.k, prior, holders)
    if "neighbour" in cfg.routes:
        # fused again with the first pass's ranks: a neighbour earns its place by its seed's rank
        t = time.perf_counter()
        hits["neighbour"] = ctx.neighbour([index.row[s.fact_id] for s in seeds[: cfg.neighbour_seeds]],
                                          cfg.neighbour_span)
        if hits["neighbour"]:
            fusion.add("neighbour", hits["neighbour"])
            # K widens by the neighbours that were not seeds, so no first-pass seed leaves the bundle: a
            # window around a match is added to it, as traversal adds partners (at K = 10 a one-session
            # store's neighbours otherwise displaced the seeds that mattered: MemSyco evidence rows)
            first = {s.fact_id for s in seeds}
            fused = fusion.fuse(cfg, cfg.k + len({f for f, _, _ in hits["neighbour"]} - first), prior, holders)
            got = {s.fact_id for s in fused}
            # K means K: every first-pass seed stays a seed; the neighbour route's additions are flagged
            # ``window`` and reported apart from the K seeds
            seeds = ([s if s.fact_id in first else _as_window(s) for s in fused]
                     + [s for s in seeds if s.fact_id not in got])
        ms["route_neighbour"] = (time.perf_counter() - t) * 1e3
    return seeds, ms


def holder_factors(index: RouteIndex, cfg: RetrievalConfig) -> Callable[[np.ndarray], np.ndarray]:
    """Rows -> ``cfg.holder_weight`` of each row's holder, from per-version holder codes (issue 45)."""
    got = index.derived.get("holders")
    if got is None:
        names: dict[str, int] = {}
        codes = np.fromiter((names.setdefault(h, len(names)) for h in index.holder), dtype=np.int64,
                            count=len(index.holder))
        got = index.derived["holders"] = (codes, list(names))
    codes, names_in_order = got
    table = np.asarray([cfg.holder_weight(h) for h in names_in_order] or [1.0])

    def factors(rows: np.ndarray) -> np.ndarray:
        out: np.ndarray = table[codes[rows]]
        return out

    return factors


def content_prior(index: RouteIndex, candidates: Iterable[str], cfg: RetrievalConfig) -> dict[str, float]:
    """Per candidate fact: ``question_weight`` if it is a question, times its information share below
    ``min_information`` (retrieval/seeds/index.py: information_of)."""
    out: dict[str, float] = {}
    if cfg.question_weight >= 1 and cfg.min_information <= 0:
        return out
    info = index.information(cfg.information_measure) if cfg.min_information > 0 else None
    for fid in candidates:
        w = cfg.question_weight if index.facts[fid].statement.rstrip().endswith("?") else 1.0
        if info is not None and len(info):
            w *= min(1.0, float(info[index.row[fid]]) / cfg.min_information)
        if w < 1.0:
            out[fid] = w
    return out


# With an allowed set (time travel, graph/timeline.py) hits outside it are dropped after the search, so
# the search asks for this many more candidates to still find the best allowed ones.
ALLOWED_OVERFETCH = 5000


def restrict(sub: Subgraph, allowed_ids: frozenset[str] | None) -> Subgraph:
    """``sub`` without the facts outside ``allowed_ids`` and the relations touching them."""
    if allowed_ids is None:
        return sub
    facts = {f: x for f, x in sub.facts.items() if f in allowed_ids}
    return Subgraph(facts=facts, relations=[r for r in sub.relations if r.src in allowed_ids and r.dst in allowed_ids],
                    concept_of={f: c for f, c in sub.concept_of.items() if f in facts},
                    concept_paths={f: p for f, p in sub.concept_paths.items() if f in facts})


def seed_search(store: GraphStore, user_id: str, query: str, query_embedding: Sequence[float] | None,
                cfg: RetrievalConfig, allowed_ids: frozenset[str] | None = None) -> list[SeedHit]:
    extra = 0 if allowed_ids is None else ALLOWED_OVERFETCH
    dense = (store.vector_search(user_id, query_embedding, cfg.dense_candidates + extra)
             if query_embedding is not None else [])
    text = store.text_search(user_id, query, cfg.text_candidates + extra) if cfg.text_candidates else []
    if allowed_ids is not None:
        dense = [h for h in dense if h[0] in allowed_ids][:cfg.dense_candidates]
        text = [h for h in text if h[0] in allowed_ids][:cfg.text_candidates]
    fused = rrf_fuse([dense, text], len(dense) + len(text), cfg.rrf_k)
    if any(w != 1.0 for w in cfg.holder_weights.values()) and fused:
        # The holder factor applies here too (one fetch of the candidates): without it, what the
        # assistant said competes with the user's own words at full weight on this path alone.
        facts = store.fetch(user_id, [f for f, _ in fused]).facts
        fused = [(f, s * cfg.holder_weight(facts[f].holder if f in facts else None)) for f, s in fused]
        fused.sort(key=lambda kv: (-kv[1], kv[0]))
    fused = fused[: cfg.k]
    d_rank = {f: (i + 1, s) for i, (f, s) in enumerate(dense)}
    t_rank = {f: (i + 1, s) for i, (f, s) in enumerate(text)}
    return [SeedHit(fact_id=f, score=s, routes={n: r[f][0] for n, r in (("fact_dense", d_rank), ("fact_bm25", t_rank)) if f in r},
                    dense_rank=d_rank.get(f, (None, None))[0], dense_score=d_rank.get(f, (None, None))[1],
                    text_rank=t_rank.get(f, (None, None))[0], text_score=t_rank.get(f, (None, None))[1])
            for f, s in fused]


def traverse(store: GraphStore, user_id: str, seed_ids: Sequence[str], cfg: RetrievalConfig,
             allowed_ids: frozenset[str] | None = None) -> tuple[Subgraph, int, bool]:
    """Closure of ``seed_ids`` under SUPERSEDES/CONFLICTS_WITH (both directions), with a cap.

    Returns the fetched subgraph, the number of fetch rounds and whether the cap stopped it.
    Each round fetches everything within ``max_hops``; a fetched relation whose other end is
    still missing means the closure is not done yet, so we go again from the whole set.
    """
    sub = restrict(store.fetch(user_id, list(seed_ids), hops=cfg.max_hops if seed_ids else 0), allowed_ids)
    rounds, capped = 1, False
    while True:
        missing = {e for r in sub.relations for e in (r.src, r.dst)} - set(sub.facts)
        if not missing:
            break
        if len(sub.facts) >= cfg.max_facts:
            capped = True
            break
        sub = restrict(store.fetch(user_id, sorted(set(sub.facts) | missing), hops=cfg.max_hops), allowed_ids)
        rounds += 1
    return sub, rounds, capped or len(sub.facts) > cfg.max_facts


def update_turns_of(sub: Subgraph) -> list[str]:
    """The source turns of the updates in ``sub``: facts that SUPERSEDE a fact."""
    ups = {r.src for r in sub.relations if r.type == "SUPERSEDES" and r.src in sub.facts}
    return sorted({t for u in ups for t in sub.facts[u].source_turn_ids})


def index_subgraph(index: RouteIndex, seed_ids: Sequence[str], cfg: RetrievalConfig, traverse: bool,
                   allowed_ids: frozenset[str] | None = None) -> tuple[Subgraph, int, bool]:
    """Like ``traverse`` (or a plain fetch when ``traverse`` is off), but from the route index: the
    same snapshot the seeds came from, no store round trip."""
    def ok(f: str) -> bool:
        return f in index.facts and (allowed_ids is None or f in allowed_ids)

    seen = [f for f in dict.fromkeys(seed_ids) if ok(f)]
    rounds, capped = 0, False
    if traverse:
        have, frontier = set(seen), list(seen)
        while frontier:
            if len(have) >= cfg.max_facts:
                capped = True
                break
            rounds += 1
            nxt = []
            for f in frontier:
                for r in index.relations_of.get(f, ()):
                    o = r.dst if r.src == f else r.src
                    if o not in have and ok(o):
                        have.add(o)
                        nxt.append(o)
            seen.extend(nxt)
            frontier = nxt
    facts = {f: index.facts[f] for f in seen}
    rels = {r.key: r for f in facts for r in index.relations_of.get(f, ())
            if allowed_ids is None or (r.src in allowed_ids and r.dst in allowed_ids)}
    sub = Subgraph(facts=facts, relations=list(rels.values()),
                   concept_of={f: index.concept_of[f] for f in facts if f in index.concept_of},
                   concept_paths=paths.of(facts) if isinstance(paths := index.concept_paths, ConceptPaths)
                   else {f: paths[f] for f in facts if f in paths})
    return sub, rounds, capped


def components(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Connected components (undirected) by union-find; the component index follows ``ids`` order."""
    parent = {i: i for i in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        if a in parent and b in parent:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra
    comp: dict[str, int] = {}
    out: dict[str, int] = {}
    for i in ids:
        out[i] = comp.setdefault(find(i), len(comp))
    return out


def _as_window(s: SeedHit) -> SeedHit:
    """``s`` flagged as a neighbour-route addition: a new SeedHit (``model_copy`` with an update costs more)."""
    return SeedHit(**(s.__dict__ | {"window": True}))


def _time_key(f: Fact) -> tuple[str, str]:
    t = f.observed_at or f.valid_from or f.recorded_at
    return (t.isoformat() if t else "", f.fact_id)


def _time_keys(index: RouteIndex | None, facts: Mapping[str, Fact], ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``_time_key`` of each of ``ids``, from the index's per-version cache where there is one (formatting
    the dates was ~4 % of a request, issue 45); the cache holds a key only for the very Fact it was made from."""
    if index is None:
        return {i: _time_key(facts[i]) for i in ids}
    cache: dict[str, tuple[Fact, tuple[str, str]]] = index.derived.setdefault("time_keys", {})
    out: dict[str, tuple[str, str]] = {}
    for i in ids:
        f = facts[i]
        got = cache.get(i)
        if got is None or got[0] is not f:
            got = cache[i] = (f, _time_key(f))
        out[i] = got[1]
    return out


def brief(f: Fact, index: RouteIndex | None, query: str, words: int) -> str | None:
    """``f``'s statement cut to its most informative ``words`` words (the route index's IDF), keeping a
    ``"holder: "`` prefix; None when it is short already or there is no index."""
    if index is None or len(f.statement.split()) <= words:
        return None
    prefix = f"{f.holder}: " if f.holder and f.statement.startswith(f"{f.holder}: ") else ""
    return prefix + informative_window(f.statement[len(prefix):], index.fbm25.idf, query, words)


def _state(index: RouteIndex | None, f: Fact, sub: Subgraph, rels: list[Relation], now: datetime,
           capped: bool = True) -> RelationalState | None:
    """``f``'s state from the index's per-version cache (derived and kept on first use), where it is the
    state ``derive_state`` gives here: every relation of ``f`` is in ``rels`` with its other end fetched,
    and ``f`` has no expiry or end of validity (the one way ``now`` enters); else None. ``capped`` False:
    ``sub`` is the index's whole closure (``index_subgraph``, no cap hit), so every other end is in it."""
    if index is None or f.expired_at is not None or f.valid_to is not None:
        return None
    fid = f.fact_id
    every = index.relations_of.get(fid, ())
    if len(rels) != len(every) or (capped and any((r.dst if r.src == fid else r.src) not in sub.facts for r in every)):
        return None  # a relation or a partner left out (the traversal cap): derived from what is here
    got: RelationalState | None = index.states.get(fid)
    if got is None:
        got = index.states[fid] = derive_state(f, every, sub.facts, sub.concept_paths.get(fid, ()), now)
    return got


def retrieve(store: GraphStore, user_id: str, query: str, query_embedding: Sequence[float] | None,
             cfg: RetrievalConfig | None = None, now: datetime | None = None,
             allowed_ids: frozenset[str] | None = None, index: RouteIndex | None = None) -> EvidenceBundle:
    """``allowed_ids`` (time travel): when given, seeds, traversal and the relations used to derive
    states are all restricted to these fact ids; ``now`` is the instant states are derived at (expiry)."""
    cfg = (cfg or RetrievalConfig()).for_request(query)
    now = now or utcnow()
    t0 = time.perf_counter()
    route_ms: dict[str, float] = {}
    if index is not None:
        seeds, route_ms = route_seeds(index, query, query_embedding, cfg, allowed_ids)
    else:
        seeds = seed_search(store, user_id, query, query_embedding, cfg, allowed_ids)
    t1 = time.perf_counter()
    seed_ids = [s.fact_id for s in seeds]
    if index is not None:
        sub, rounds, capped = index_subgraph(index, seed_ids, cfg, cfg.traverse, allowed_ids)
    elif cfg.traverse:
        sub, rounds, capped = traverse(store, user_id, seed_ids, cfg, allowed_ids)
    else:
        sub, rounds, capped = restrict(store.fetch(user_id, seed_ids), allowed_ids), 0, False
    by_turn: list[str] = []
    if cfg.traverse and cfg.update_turns and (turns := update_turns_of(sub)):
        # an update arrives with its whole turn; the turn's facts bring their own partners (closure again)
        near = ([index.ids[n] for t in turns for n in index.turn_facts.get(t, ())] if index is not None
                else store.turn_facts(user_id, turns))
        by_turn = sorted({f for f in near if f not in sub.facts and (allowed_ids is None or f in allowed_ids)})
        if by_turn:
            wider = [*seed_ids, *sorted(sub.facts), *by_turn]
            if index is not None:
                sub, more, capped = index_subgraph(index, wider, cfg, True, allowed_ids)
            else:
                sub, more, capped = traverse(store, user_id, wider, cfg, allowed_ids)
            rounds += more
    t2 = time.perf_counter()
    seed_score = {s.fact_id: s.score for s in seeds}
    ids = [i for i in seed_ids if i in sub.facts] + sorted(i for i in sub.facts if i not in seed_score)
    rels = [r for r in sub.relations if r.src in sub.facts and r.dst in sub.facts] if cfg.traverse else []
    comp = components(ids, [(r.src, r.dst) for r in rels])
    rels_of: dict[str, list[Relation]] = {i: [] for i in ids}
    for r in sub.relations:
        for end in (r.src, r.dst):
            if end in rels_of:
                rels_of[end].append(r)
    # Groups in order of their best seed; inside a group, chronological (history reads forward).
    tkey = _time_keys(index, sub.facts, ids)
    order = sorted(ids, key=lambda i: (comp[i], tkey[i]))
    words = cfg.broad_line_words if spans_conversation(query) else \
        cfg.several_line_words if cfg.several_line_words and asks_for_several(query) else 0
    broad = index is not None and words > 0
    items: list[EvidenceItem] = []
    for n, fid in enumerate(order, start=1):
        f = sub.facts[fid]
        state = _state(index, f, sub, rels_of[fid], now, capped) if cfg.traverse and allowed_ids is None else None
        if state is None:
            path = sub.concept_paths.get(fid, ())
            state = derive_state(f, rels_of[fid] if cfg.traverse else [], sub.facts, path, now)
        items.append(EvidenceItem(alias=f"F{n}", fact=f, state=state, seed=fid in seed_score,
                                  score=seed_score.get(fid), group=comp[fid],
                                  brief=brief(f, index, query, words) if broad else None))
    t3 = time.perf_counter()
    explain = Explain(
        query=query, k=cfg.k, seeds=seeds, added_by_traversal=[i for i in ids if i not in seed_score],
        added_by_update_turn=[i for i in by_turn if i in sub.facts], traversal_rounds=rounds, capped=capped,
        timings_ms={"seeds": (t1 - t0) * 1e3, "traverse": (t2 - t1) * 1e3, "assemble": (t3 - t2) * 1e3, **route_ms})
    return EvidenceBundle(user_id=user_id, query=query, items=items, explain=explain)

