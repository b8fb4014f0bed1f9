"""What the per-user route index holds (RouteIndex) and the pieces both its builders share.

retrieval/seeds/index.py builds it whole from a snapshot; retrieval/seeds/delta.py extends one version
by a commit's ChangeSet. Rows of the per-fact (and per-turn) arrays are in the order facts (turns)
were added; every route breaks a tie by fact id (turn position in its session), never by row, so
both builders rank alike.

The *retrieval vector* of a fact encodes its holder with the statement ("Caroline: ...",
"assistant: ..."): a request naming a person lands near that person's facts. The vector stored with
the fact (its *identity* vector, used for duplicate detection and adjudication) stays bare, because
the name pulls one speaker's facts together (docs/design-notes.md §14).
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from graph.bm25 import tokenize
from graph.models import Concept, Fact, Relation, as_utc
from retrieval.seeds.textindex import Grow, TextIndex
from graph.snapshot import concept_path

Embed = Callable[[Sequence[str]], np.ndarray]
TurnKey = tuple[str, int, str]  # (session id, position in it, turn id): how turns are ordered and ties broken
_CAP = re.compile(r"\b[A-Z][a-zA-Z'\-]{2,}\b")
# Capitalised words that name nobody: sentence openers, pronouns, days, months.
_NOT_ENTITY = frozenset(
    "the this that these those there then when what where which who why how yes yeah wow hey thanks thank "
    "my our your his her their its and but for with from into about after before also just really very "
    "i'm i've i'd i'll it's that's she's he's they're we're you're can't don't didn't won't isn't wasn't "
    "user assistant monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december today tomorrow yesterday last next "
    "shared image photo picture".split())


def retrieval_text(f: Fact) -> str:
    """The statement as the retrieval vector reads it: with its holder unless it already opens with it."""
    if f.holder in ("", "user") or f.statement.startswith(f"{f.holder}:"):
        return f.statement
    return f"{f.holder}: {f.statement}"


def entities_of(text: str) -> set[str]:
    """Lower-cased capitalised words that plausibly name a person, place or thing.

    >>> sorted(entities_of("Caroline: I went to Sweden with Melanie. The trip was fun"))
    ['caroline', 'melanie', 'sweden']
    """
    return {w.lower() for w in _CAP.findall(text) if w.lower() not in _NOT_ENTITY}


# "sum": summed IDF of the distinct content words (how much a line says; starves terse, specific
# lines: "Is vegetarian" sums less than "Works night shifts at the hospital"); "max": the IDF of the
# rarest content word (how specific its most specific word is: "vegetarian" beats "fun").
InformationMeasure = Literal["sum", "max"]


def information_of(f: Fact, idf: Mapping[str, float], measure: InformationMeasure = "sum") -> float:
    """IDF of the statement's distinct content words, summed or the largest (``measure``), without
    its holder's name (a word unseen by ``idf`` counts as the rarest seen)."""
    top = max(idf.values(), default=1.0)
    holder = set(tokenize(f.holder)) if f.holder not in ("", "user") else set()
    vals = [idf.get(w, top) for w in set(tokenize(f.statement)) - holder]
    return float(sum(vals) if measure == "sum" else max(vals, default=0.0))


def fact_time(f: Fact) -> datetime | None:
    """When the fact is about: a plan's planned time (``qualifiers["planned_for"]``, induction/planned.py; its
    ``valid_from`` is when it was said), else its valid start, else when it was said or stored."""
    planned = f.qualifiers.get("planned_for")
    t = _iso(planned) if planned else None
    t = t or f.valid_from or f.observed_at or f.recorded_at
    return as_utc(t).replace(tzinfo=None) if t else None


def _iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


class ConceptPaths(Mapping[str, tuple[str, ...]]):
    """fact id -> its concept's names from the root down, computed on lookup (a concept renamed or moved
    changes every path under it; nothing here is rewritten for that)."""

    def __init__(self, concept_of: Mapping[str, str], concepts: Mapping[str, Concept], parent: Mapping[str, str]):
        self.concept_of, self.concepts, self.parent = concept_of, concepts, parent
        self._seen: dict[str, tuple[str, ...]] = {}  # concept id -> path (a new version has its own)

    def __getitem__(self, fact_id: str) -> tuple[str, ...]:
        c = self.concept_of[fact_id]
        got = self._seen.get(c)
        if got is None:
            got = self._seen[c] = concept_path(self.concepts, self.parent, c)
        return got

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self.concept_of

    def of(self, fact_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """``{f: self[f]}`` for those of ``fact_ids`` placed in a concept, in one call (a request's bundle)."""
        out: dict[str, tuple[str, ...]] = {}
        seen, concept_of = self._seen, self.concept_of
        for f in fact_ids:
            c = concept_of.get(f)
            if c is not None:
                got = seen.get(c)
                if got is None:
                    got = seen[c] = concept_path(self.concepts, self.parent, c)
                out[f] = got
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self.concept_of)

    def __len__(self) -> int:
        return len(self.concept_of)


@dataclass
class RouteIndex:
    user_id: str
    token: str
    facts: dict[str, Fact]
    ids: list[str]  # row order of every per-fact array below
    fmat: np.ndarray | None  # normalised retrieval vectors, one row per id
    fbm25: TextIndex
    holder: list[str]
    turn_ids: list[str]
    tmat: np.ndarray | None
    tbm25: TextIndex
    turn_facts: dict[str, list[int]]  # turn id -> rows of the facts that cite it
    turn_rows: list[list[int]]  # per turn_ids entry: rows of the facts that cite it
    entity_rows: dict[str, list[int]]  # entity -> rows of facts mentioning it
    times: np.ndarray  # seconds since epoch per row (nan when unknown)
    concept_rows: dict[str, list[int]]  # live concept id -> rows of the facts it directly CONTAINS
    concept_ids: list[str]
    cmat: np.ndarray | None  # normalised concept centroids, one row per concept_ids entry (concepts with >= 2 members)
    latest: datetime | None  # latest session date: "last week" is resolved against it
    row: dict[str, int] = field(default_factory=dict)
    # The snapshot's relations and concept placement, so traversal and state derivation read the same
    # version the seeds came from, without a store round trip (retrieval/retrieve.py: index_subgraph).
    relations_of: dict[str, list[Relation]] = field(default_factory=dict)
    concept_of: dict[str, str] = field(default_factory=dict)
    concept_paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Per turn_ids entry: the speaker role and a recency key (later turns sort higher), so a request
    # that refers back ("the situation we discussed") can be resolved to the latest turn (context.py).
    turn_role: list[str] = field(default_factory=list)
    turn_recency: list[tuple[float, int]] = field(default_factory=list)
    # rows of a person's standing instructions ("Always … when I ask about …"): the instruction route
    instruction_rows: list[int] = field(default_factory=list)
    # Per turn_ids entry: (session id, position in it), None when unknown; and its inverse. The
    # neighbour route reads a seed turn's surroundings from them.
    turn_place: list[tuple[str, int] | None] = field(default_factory=list)
    turn_at: dict[tuple[str, int], int] = field(default_factory=dict)
    turn_index: dict[str, int] = field(default_factory=dict)  # turn id -> index into turn_ids
    # Per turn_ids entry: (session id, position, turn id), the order ties between turns are broken in.
    turn_key: list[TurnKey] = field(default_factory=list)
    turn_said: list[datetime | None] = field(default_factory=list)  # per turn_ids entry: when it was said
    # Tie order as numbers: per row (per turn) a value that sorts as its fact id (turn key) does, so a
    # route breaks ties in numpy (retrieval/seeds/rank.py: _top); kept by ``Order`` as rows are appended.
    forder: Order | None = None
    torder: Order | None = None
    # What retrieval/seeds/delta.py extends: the snapshot version this index is at, the concept tree, the
    # shared append-only buffers behind fmat/tmat/times, and each live concept's centroid (concept_ids'
    # rows of cmat; retrieval/seeds/concepts.py).
    version: int = -1
    concepts: dict[str, Concept] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    grow: dict[str, Grow] = field(default_factory=dict)
    concept_centroids: dict[str, np.ndarray] = field(default_factory=dict)
    # Per row, computed on first use (only a config with ``min_information`` reads it): see information.
    _information: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # fact id -> its RelationalState over all its relations, for a fact whose state does not depend on
    # the instant (no expiry, no valid_to): filled and read by retrieval (retrieval/retrieve.py), per version
    states: dict[str, Any] = field(default_factory=dict, repr=False)
    # What retrieval derives from this version once and reuses per request (retrieval/retrieve.py: the
    # bundle's sort keys, the holder codes of the rows), filled on first use
    derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def information(self, measure: InformationMeasure = "sum") -> np.ndarray:
        """Per row: how much the statement says (``information_of``), its holder's name left out, over
        the user's median ("It was so fun!" says little however close its vector lands). Computed once
        per index and measure; a concurrent first use computes it twice, harmlessly."""
        got = self._information.get(measure)
        if got is None:
            got = np.asarray([information_of(self.facts[i], self.fbm25.idf, measure) for i in self.ids],
                             dtype=np.float64)
            if len(got):  # as a share of this user's median fact: IDF scales with how many facts there are
                got /= max(float(np.median(got)), 1e-9)
            self._information[measure] = got
        return got


class Order:
    """Per row, a float that sorts as the row's key does (fact id, turn key), for rows appended in any
    key order: a new key takes the midpoint of its neighbours' values (all renumbered when a gap runs
    out). ``values`` is the per-row array; ``add`` returns a new Order (this one is left as it was)."""

    def __init__(self, keys: Sequence[Any]) -> None:
        rank = sorted(range(len(keys)), key=lambda r: keys[r])
        self.keys = [keys[r] for r in rank]  # sorted
        self.vals = [float(v) for v in range(len(keys))]  # value of each sorted key
        per_row = np.empty(len(keys))
        per_row[rank] = self.vals
        self.grow = Grow(per_row)
        self.values: np.ndarray = self.grow.view()

    def add(self, new: Sequence[Any], every: Sequence[Any]) -> Order:
        """This order with rows for ``new`` appended; ``every`` (all rows' keys, new ones last) is read
        only if the values must be renumbered."""
        keys, vals = list(self.keys), list(self.vals)
        out: list[float] = []
        for k in new:
            pos = bisect.bisect_left(keys, k)
            lo = vals[pos - 1] if pos else (vals[0] - 2.0 if vals else -1.0)
            hi = vals[pos] if pos < len(vals) else lo + 2.0
            v = (lo + hi) / 2
            if not lo < v < hi:
                return Order(every)
            keys.insert(pos, k)
            vals.insert(pos, v)
            out.append(v)
        got = Order.__new__(Order)
        got.keys, got.vals = keys, vals
        got.grow = self.grow if self.grow.n == len(self.values) else Grow(self.values)
        got.grow.append(np.asarray(out, dtype=np.float64))
        got.values = got.grow.view(len(self.values) + len(out))
        return got


def norm_rows(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(m, dtype=np.float32)
    out = out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-12)
    return out


class Memo:
    """Text -> vector, bounded (least recently used goes first)."""

    def __init__(self, cap: int = 50_000):
        self.cap, self.d = cap, OrderedDict[str, np.ndarray]()

    def embed(self, embed: Embed, texts: Sequence[str]) -> np.ndarray | None:
        if not texts:
            return None
        todo = list(dict.fromkeys(t for t in texts if t not in self.d))
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            for t, v in zip(chunk, embed(chunk)):
                self.d[t] = np.asarray(v, dtype=np.float32)
        while len(self.d) > self.cap:
            self.d.popitem(last=False)
        return norm_rows(np.stack([self.d[t] for t in texts]))

    def keep(self, texts: set[str]) -> None:
        for t in [t for t in self.d if t not in texts]:
            del self.d[t]


def turn_recency(turn_id: str, rows: list[int], ids: list[str], facts: dict[str, Fact],
                 turn_when: Mapping[str, tuple[datetime | None, int]] | None) -> tuple[float, int]:
    """(seconds, position): when the turn was said, else when its facts were stored (an undated session
    is ordered by ingest), then its position in the session."""
    at, seq = (turn_when or {}).get(turn_id, (None, 0))
    if at is None:
        said = [facts[ids[r]].observed_at for r in rows]
        stored = [facts[ids[r]].recorded_at for r in rows]
        stamps = [t for t in said if t is not None] or [t for t in stored if t is not None]
        at = min(stamps) if stamps else None
    return (as_utc(at).timestamp() if at is not None else float("-inf"), seq)


