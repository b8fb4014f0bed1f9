"""What the concept step knows about one user, kept between sessions (induction/ontology.py).

Each session the concept step needs every live fact's unit vector, statement and holder, the user's proper
nouns and term counts (for names) and the SPLIT lineage from the edit log. Built from scratch that is work
proportional to the user's whole history; ``ConceptStateCache`` keeps it per user, keyed by the store
version it describes (as the route index is), and ``advance`` moves it over one committed batch (its new
facts, retractions and SPLITs). Any other writer changes the version, and the next session rebuilds it.
``base_state`` is the from-scratch build; the incremental one equals it (tests/test_concept_naming.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from graph.edits import AttachFact, CreateConcept, EditBatch, OntologyEdit, Retract, SplitConcept
from graph.snapshot import Snapshot
from induction.naming import Embed, Namer, ProperCounts, concept_description, unnamed_label

INDUCED = "/~"
Stored = Mapping[str, Sequence[float]] | Callable[[], Mapping[str, Sequence[float]]]


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-12)
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-") or "topic"


class _Plus(Mapping[str, int]):
    """Two term counts added, without copying either (the user's corpus plus this session's texts)."""

    def __init__(self, a: Mapping[str, int], b: Mapping[str, int]):
        self.a, self.b = a, b

    def __getitem__(self, k: str) -> int:
        return self.a.get(k, 0) + self.b.get(k, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(set(self.a) | set(self.b))

    def __len__(self) -> int:
        return len(set(self.a) | set(self.b))


@dataclass
class Base:
    """One user's concept-step knowledge at store version ``version`` (live facts only, but every holder)."""

    version: int
    vec: dict[str, np.ndarray]
    text: dict[str, str]
    holder: dict[str, str]
    proper: ProperCounts
    corpus: Counter[str]
    split_from: dict[str, str]  # a SPLIT's child -> the split concept (undone SPLITs left out)
    namer: Namer
    # concept -> (its members, the user's names, proper nouns, the split settings) when it was last found not to split: the same
    # inputs give the same answer, so an unchanged concept is not tried again every session
    no_split: dict[str, tuple[object, ...]] = field(default_factory=dict)

    def add_text(self, fid: str, text: str) -> None:
        self.text[fid] = text
        self.proper.add(text)
        self.corpus.update(Namer.counts([text])[0])

    def drop(self, fid: str) -> None:
        text = self.text.pop(fid, None)
        self.vec.pop(fid, None)
        if text is not None:
            self.proper.remove(text)
            self.corpus.subtract(Namer.counts([text])[0])


def base_state(snap: Snapshot, stored: Mapping[str, Sequence[float]], embed: Embed | None = None) -> Base:
    """From scratch: every stored vector of a live fact, every statement, the whole edit log's SPLITs."""
    ids = [f for f in stored if f in snap.facts and snap.facts[f].retracted_at is None]
    mat = _unit(np.asarray([stored[f] for f in ids], dtype=np.float32)) if ids else None
    vec = {f: mat[i] for i, f in enumerate(ids)} if mat is not None else {}
    text = {f: x.statement for f, x in snap.facts.items() if x.retracted_at is None}
    holder = {f: x.holder for f, x in snap.facts.items()}
    proper = ProperCounts(text.values())
    split_from: dict[str, str] = {}
    for logged in sorted(snap.edits.values(), key=lambda e: e.seq):
        if logged.op == "SPLIT" and logged.undone_at is None:
            p = logged.payload
            split_from.update({str(c): str(p.get("concept_id")) for c in p.get("children", [])})
    return Base(snap.version, vec, text, holder, proper, Namer.counts(text.values())[0], split_from,
                Namer(holder.values(), proper.words(), embed))


class ConceptStateCache:
    """``Base`` per user for the store version it describes; a few recent users only."""

    def __init__(self, users: int = 8):
        self.users = users
        self._by_user: dict[str, Base] = {}
        self.rebuilds = 0  # how many times a user's state was built from scratch (tests, the bench)

    def get(self, snap: Snapshot, stored: Stored, embed: Embed | None = None) -> Base:
        got = self._by_user.get(snap.user_id)
        if got is not None and got.version == snap.version and got.namer.embed is embed:
            return got
        self.rebuilds += 1
        vecs = stored() if callable(stored) else stored
        got = self._by_user[snap.user_id] = base_state(snap, vecs, embed)
        while len(self._by_user) > self.users:
            self._by_user.pop(next(iter(self._by_user)))
        return got

    def advance(self, before: Snapshot, after: Snapshot, batch: EditBatch) -> None:
        """The user's state at ``before.version`` moved over ``batch`` (as committed) to ``after.version``;
        dropped when the cache does not hold ``before``'s state (the next session rebuilds it)."""
        b = self._by_user.pop(after.user_id, None)
        if b is None or b.version != before.version:
            return
        for e in batch.edits:
            if isinstance(e, AttachFact):
                f = e.fact.fact_id
                b.holder[f] = e.fact.holder
                b.add_text(f, e.fact.statement)
                if e.embedding is not None:
                    b.vec[f] = _unit(np.asarray(e.embedding, dtype=np.float32))
            elif isinstance(e, Retract):
                b.drop(e.fact_id)
            elif isinstance(e, SplitConcept):
                b.split_from.update({c.concept_id: e.concept_id for c in e.children})
        b.namer.update(_new_holders(batch), b.proper.words())
        b.version = after.version
        self._by_user[after.user_id] = b


def _new_holders(batch: EditBatch) -> list[str]:
    return [e.fact.holder for e in batch.edits if isinstance(e, AttachFact)]


@dataclass
class State:
    """One session's working view: the user's ``Base`` plus this session's new facts, and the tree as it
    is being planned (parents, live concepts, each fact's concept)."""

    snap: Snapshot
    vec: dict[str, np.ndarray]
    text: dict[str, str]
    holder: dict[str, str]
    parent: dict[str, str]
    live: set[str]
    home: dict[str, str]
    taken: set[str]
    namer: Namer
    corpus: tuple[Mapping[str, int], int]
    split_from: dict[str, str]
    no_split: dict[str, tuple[object, ...]] = field(default_factory=dict)
    created_now: set[str] = field(default_factory=set)
    _inv: dict[str, set[str]] | None = None

    def members(self, cid: str) -> list[str]:
        if self._inv is None:
            self._inv = {}
            for f, c in self.home.items():
                if f in self.vec:
                    self._inv.setdefault(c, set()).add(f)
        return sorted(self._inv.get(cid, ()))

    def move(self, f: str, cid: str) -> None:
        old = self.home.get(f)
        self.home[f] = cid
        if self._inv is not None and f in self.vec:
            if old is not None:
                self._inv.get(old, set()).discard(f)
            self._inv.setdefault(cid, set()).add(f)

    def centroid(self, fids: Sequence[str]) -> np.ndarray:
        return _unit(np.mean(np.stack([self.vec[f] for f in fids]), axis=0))

    def new_id(self, under: str, name: str) -> str:
        base = f"{under}{INDUCED}{_slug(name)}"
        cid, k = base, 2
        while cid in self.taken:
            cid, k = f"{base}-{k}", k + 1
        self.taken.add(cid)
        return cid

    def ranked(self, fids: Sequence[str]) -> list[tuple[str, float]]:
        """The members' characteristic terms against all the user's facts, best first."""
        return self.namer.scored([self.text[f] for f in fids], self.corpus)

    def ranked_within(self, fids: Sequence[str], within: Sequence[str]) -> list[tuple[str, float]]:
        """The members' characteristic terms against ``within`` (a split's parent), best first."""
        return self.namer.scored([self.text[f] for f in fids], Namer.counts(self.text[f] for f in within))

    def prefetch_names(self, groups: Sequence[tuple[Sequence[str], Sequence[str]]]) -> None:
        """Embed, in one call, the candidate name words ``name`` will re-rank for each (fids, within)."""
        if self.namer.embed is None:
            return
        words: set[str] = set()
        for fids, within in groups:
            corpus = Namer.counts(self.text[f] for f in within) if within else self.corpus
            words.update(self.namer.candidates([self.text[f] for f in fids], corpus))
        if words:
            self.namer.vectors(sorted(words))

    def name(self, fids: Sequence[str], within: Sequence[str] = ()) -> tuple[str, str]:
        """Name and description; ``within``: the facts to tell them apart from (a split's parent), else all."""
        texts = [self.text[f] for f in fids]
        corpus = Namer.counts(self.text[f] for f in within) if within else self.corpus
        with_vec = [f for f in fids if f in self.vec]
        c = self.centroid(with_vec) if with_vec else None
        name = self.namer.name(texts, corpus, c)
        central = max(with_vec, key=lambda f: float(self.vec[f] @ c)) if c is not None else None
        return name, concept_description(name, fids, self.text.get(central or ""), sorted({self.holder[f] for f in fids}))

    def label(self, fids: Sequence[str], within: Sequence[str] = ()) -> tuple[str, str]:
        """``name``, or, for members the namer cannot name, the unnamed display state built from their most
        characteristic terms (``naming.unnamed_label``): the concept exists because the data made it."""
        name, desc = self.name(fids, within)
        if name:
            return name, desc
        return unnamed_label(self.ranked_within(fids, within) if within else self.ranked(fids)), desc


def session_state(b: Base, snap: Snapshot, edits: Sequence[OntologyEdit]) -> State:
    """``b`` (the user's state at ``snap``) with this session's new facts; ``b`` itself is not changed."""
    vec, text, holder = dict(b.vec), dict(b.text), dict(b.holder)
    parent = dict(snap.parent)
    live = {c for c, v in snap.concepts.items() if v.retired_at is None}
    new_texts: list[str] = []
    for e in edits:
        if isinstance(e, CreateConcept):
            parent[e.concept_id] = e.parent_id or snap.root_id
            live.add(e.concept_id)
        elif isinstance(e, AttachFact):
            f = e.fact.fact_id
            text[f], holder[f] = e.fact.statement, e.fact.holder
            new_texts.append(e.fact.statement)
            if e.embedding is not None:
                vec[f] = _unit(np.asarray(e.embedding, dtype=np.float32))
    for t in new_texts:
        b.proper.add(t)
    proper = b.proper.words()
    for t in new_texts:  # the user's counts stay as they were: the session is not committed yet
        b.proper.remove(t)
    new_holders = {holder[f] for f in holder.keys() - b.holder.keys()}
    b.namer.update(new_holders, proper)
    corpus = (_Plus(b.corpus, Namer.counts(new_texts)[0]), len(text))
    return State(snap, vec, text, holder, parent, live, dict(snap.fact_concept), set(snap.concepts) | set(parent),
                 b.namer, corpus, b.split_from, b.no_split)


__all__ = ["INDUCED", "Base", "ConceptStateCache", "State", "Stored", "base_state", "session_state"]
