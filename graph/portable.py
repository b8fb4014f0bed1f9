"""The portable export format of one user's memory (``evomem export`` / ``import`` / ``migrate``).

Format ``evomem-export`` version 1: UTF-8 JSON Lines, one JSON object per line, keys sorted, no
spaces, so the same memory always exports to the same bytes (export → import → export is
byte-identical on both backends; the tests check it).

Line 1, the header::

    {"counts": {...}, "embedding_dim": 384, "embeddings": "float32-le-base64", "format": "evomem-export",
     "store_version": 7, "user_id": "maya", "version": 1}

``counts`` holds the number of records of each type that follow (a truncated file is refused);
``embedding_dim`` is null when no fact has an embedding; ``store_version`` is the user's version,
kept by import. Then the records, grouped by ``type`` in this order and sorted inside each group:

- ``session``  {session_id, content_hash}                               by session_id
- ``turn``     Turn fields (graph/models.py)                            by session_id, seq, turn_id
- ``concept``  Concept fields + ``parent_id`` (null for the root)       by concept_id
- ``fact``     Fact fields + ``concept_id`` + ``embedding`` (base64 of little-endian float32, exact; null
               if the fact has none)                                    by fact_id
- ``relation`` Relation fields, its type as ``relation_type`` (SUPERSEDES / CONFLICTS_WITH)
                                                                        by relation_type, src, dst
- ``edit``     Edit fields: the audit log, payloads as stored           by seq, edit_id

Times are ISO 8601 in UTC. Ids are kept as they are, so an export can only be imported for the same
user id. DERIVED_FROM links are not records: they follow from each fact's ``source_turn_ids``.

Import is backend-neutral: the file becomes a Snapshot, is checked with the same invariants every
commit keeps (graph/edits.py ``check_invariants``), and is written as one ChangeSet (the diff from an
empty user), so it is one transaction on either store: a failed import leaves nothing behind.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from graph.edits import EditRejected, check_invariants
from graph.ids import foreign_ids, validate_user_id
from graph.models import Concept, Edit, Fact, Relation, Turn
from graph.snapshot import ChangeSet, Snapshot, diff
from graph.store import GraphStore, StoreError, UnknownUser

FORMAT = "evomem-export"
FORMAT_VERSION = 1
EMBEDDING_ENCODING = "float32-le-base64"
RECORD_TYPES: tuple[str, ...] = ("session", "turn", "concept", "fact", "relation", "edit")
ImportMode = Literal["new", "replace", "merge"]


class PortableError(ValueError):
    """An export file that cannot be imported (``line`` is 1-based, None when about the whole file)."""

    def __init__(self, message: str, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


class ImportRefused(StoreError, ValueError):
    """The import would overwrite an existing user (and was not asked to) or the store refused it."""


@dataclass
class UserExport:
    """One user's memory, everything the format carries."""

    snapshot: Snapshot
    turns: list[Turn]
    embeddings: dict[str, list[float]] = field(default_factory=dict)


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode_embedding(vec: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_embedding(text: str) -> list[float]:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) % 4:
        raise ValueError("embedding is not a whole number of float32 values")
    return [float(x) for x in np.frombuffer(raw, dtype="<f4")]


def dump_lines(data: UserExport) -> Iterator[str]:
    """The export of ``data`` as lines (without newlines), header first, in the format's order."""
    s = data.snapshot
    child_parent = s.parent
    dims = {len(v) for v in data.embeddings.values()}
    if len(dims) > 1:
        raise PortableError(f"user {s.user_id!r} has embeddings of several sizes: {sorted(dims)}")
    records: dict[str, list[dict[str, Any]]] = {t: [] for t in RECORD_TYPES}
    records["session"] = [{"session_id": k, "content_hash": v} for k, v in sorted(s.sessions.items())]
    records["turn"] = [t.model_dump(mode="json") for t in sorted(data.turns, key=lambda t: (t.session_id, t.seq, t.turn_id))]
    records["concept"] = [c.model_dump(mode="json") | {"parent_id": child_parent.get(cid)}
                          for cid, c in sorted(s.concepts.items())]
    records["fact"] = [f.model_dump(mode="json") | {
        "concept_id": s.fact_concept.get(fid),
        "embedding": encode_embedding(data.embeddings[fid]) if fid in data.embeddings else None}
        for fid, f in sorted(s.facts.items())]
    # the record's "type" is the record type, so the relation's own type travels as relation_type
    records["relation"] = [{("relation_type" if k == "type" else k): v for k, v in r.model_dump(mode="json").items()}
                           for _, r in sorted(s.relations.items())]
    records["edit"] = [e.model_dump(mode="json") for e in sorted(s.edits.values(), key=lambda e: (e.seq, e.edit_id))]
    yield _line({"format": FORMAT, "version": FORMAT_VERSION, "user_id": s.user_id, "store_version": s.version,
                 "embeddings": EMBEDDING_ENCODING, "embedding_dim": dims.pop() if dims else None,
                 "counts": {t: len(records[t]) for t in RECORD_TYPES}})
    for t in RECORD_TYPES:
        for r in records[t]:
            yield _line({"type": t, **r})


def dumps(data: UserExport) -> str:
    return "".join(line + "\n" for line in dump_lines(data))


def read_user(store: GraphStore, user_id: str, attempts: int = 3) -> UserExport:
    """A consistent read of one user from ``store`` (read again if a commit landed in between)."""
    if user_id not in store.users():
        raise UnknownUser(f"no memories are stored for user {user_id!r}")
    for _ in range(attempts):
        snap = store.load_snapshot(user_id)
        turns = store.turns(user_id, sorted(snap.turn_ids))
        emb = store.embeddings(user_id)
        if store.load_snapshot(user_id).version == snap.version:
            return UserExport(snapshot=snap, turns=turns, embeddings={k: v for k, v in emb.items() if k in snap.facts})
    raise StoreError(f"user {user_id!r} kept changing during the export; try again")


def export_user(store: GraphStore, user_id: str) -> str:
    return dumps(read_user(store, user_id))


def _header(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise PortableError(f"not an {FORMAT} file (the first line must be its header)", 1)
    v = obj.get("version")
    if not isinstance(v, int) or v < 1:
        raise PortableError("the header has no valid format version", 1)
    if v > FORMAT_VERSION:
        raise PortableError(f"format version {v} was written by a newer evomem; this one reads up to "
                            f"{FORMAT_VERSION}", 1)
    if obj.get("embeddings") != EMBEDDING_ENCODING:
        raise PortableError(f"unknown embedding encoding {obj.get('embeddings')!r}", 1)
    counts = obj.get("counts")
    if not isinstance(counts, dict) or set(counts) != set(RECORD_TYPES) or not all(
            isinstance(n, int) and n >= 0 for n in counts.values()):
        raise PortableError("the header's counts are missing or malformed", 1)
    try:
        validate_user_id(obj.get("user_id"))
    except (ValueError, TypeError) as e:
        raise PortableError(f"the header's user id is not valid ({e})", 1) from None
    if not isinstance(obj.get("store_version"), int) or obj["store_version"] < 1:
        raise PortableError("the header's store_version must be a positive integer", 1)
    return obj


def parse_lines(lines: Iterable[str]) -> UserExport:
    """Parse and validate an export; raises PortableError naming the first bad line."""
    it = iter(enumerate(lines, start=1))
    header: dict[str, Any] | None = None
    u = ""
    snap = Snapshot(user_id="_")
    turns: list[Turn] = []
    embeddings: dict[str, list[float]] = {}
    seen: dict[str, int] = {t: 0 for t in RECORD_TYPES}
    order = 0
    for n, raw in it:
        if not raw.strip():
            raise PortableError("empty line", n)
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise PortableError(f"not valid JSON ({e.msg})", n) from None
        if header is None:
            header = _header(obj)
            u = header["user_id"]
            snap = Snapshot(user_id=u, version=header["store_version"])
            continue
        if not isinstance(obj, dict) or obj.get("type") not in RECORD_TYPES:
            raise PortableError(f"a record needs a type, one of {', '.join(RECORD_TYPES)}", n)
        rtype = obj.pop("type")
        if RECORD_TYPES.index(rtype) < order:
            raise PortableError(f"{rtype} records must come before {RECORD_TYPES[order]} records", n)
        order = RECORD_TYPES.index(rtype)
        seen[rtype] += 1
        try:
            _add(snap, turns, embeddings, rtype, obj, header.get("embedding_dim"))
        except PortableError as e:
            raise PortableError(str(e), n) from None
        except (ValidationError, ValueError, TypeError, KeyError) as e:
            raise PortableError(f"invalid {rtype} record: {_short(e)}", n) from None
    if header is None:
        raise PortableError("the file is empty")
    if seen != header["counts"]:
        raise PortableError(f"the file holds {seen} records but its header announces {header['counts']} "
                            "(truncated or edited?)")
    _check(snap, turns)
    return UserExport(snapshot=snap, turns=turns, embeddings=embeddings)


def _short(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(f"{'.'.join(str(x) for x in err['loc']) or 'record'}: {err['msg']}" for err in e.errors()[:3])
    return str(e)


def _add(snap: Snapshot, turns: list[Turn], embeddings: dict[str, list[float]], rtype: str, obj: dict[str, Any],
         dim: int | None) -> None:
    u = snap.user_id
    if rtype != "session" and obj.get("user_id", u) != u and rtype != "relation":
        raise PortableError(f"{rtype} belongs to user {obj.get('user_id')!r}, the file is for {u!r}")
    if rtype == "session":
        if set(obj) != {"session_id", "content_hash"} or not all(isinstance(v, str) for v in obj.values()):
            raise PortableError("a session record has exactly session_id and content_hash (strings)")
        if obj["session_id"] in snap.sessions:
            raise PortableError(f"session {obj['session_id']!r} appears twice")
        snap.sessions[obj["session_id"]] = obj["content_hash"]
    elif rtype == "turn":
        t = Turn.model_validate(obj)
        if t.turn_id in snap.turn_ids:
            raise PortableError(f"turn {t.turn_id!r} appears twice")
        snap.turn_ids.add(t.turn_id)
        turns.append(t)
    elif rtype == "concept":
        parent = obj.pop("parent_id", None)
        c = Concept.model_validate(obj)
        if c.concept_id in snap.concepts:
            raise PortableError(f"concept {c.concept_id!r} appears twice")
        snap.concepts[c.concept_id] = c
        if parent is not None:
            snap.parent[c.concept_id] = str(parent)
    elif rtype == "fact":
        concept, emb = obj.pop("concept_id", None), obj.pop("embedding", None)
        f = Fact.model_validate(obj)
        if f.fact_id in snap.facts:
            raise PortableError(f"fact {f.fact_id!r} appears twice")
        snap.facts[f.fact_id] = f
        if concept is not None:
            snap.fact_concept[f.fact_id] = str(concept)
        if emb is not None:
            vec = decode_embedding(str(emb))
            if dim is not None and len(vec) != dim:
                raise PortableError(f"fact {f.fact_id!r} has a {len(vec)}-value embedding, the header says {dim}")
            embeddings[f.fact_id] = vec
    elif rtype == "relation":
        r = Relation.model_validate({("type" if k == "relation_type" else k): v for k, v in obj.items()})
        if r.key in snap.relations:
            raise PortableError(f"relation {r.key} appears twice")
        snap.relations[r.key] = r
    else:
        e = Edit.model_validate(obj)
        if e.edit_id in snap.edits:
            raise PortableError(f"edit {e.edit_id!r} appears twice")
        snap.edits[e.edit_id] = e


def _check(snap: Snapshot, turns: list[Turn]) -> None:
    """Whole-file checks: the graph invariants, ids in the user's namespace, turns the facts cite."""
    try:
        check_invariants(snap)
    except EditRejected as e:
        raise PortableError(f"the exported graph is inconsistent: {e}") from None
    if snap.facts and snap.root_id not in snap.concepts:
        raise PortableError(f"the root concept {snap.root_id!r} is missing")
    foreign = foreign_ids(snap.user_id, [*snap.concepts, *snap.facts])
    if foreign:
        raise PortableError(f"ids of another user's namespace: {', '.join(sorted(foreign)[:5])}")
    for fid, f in sorted(snap.facts.items()):
        missing = [t for t in f.source_turn_ids if t not in snap.turn_ids]
        if missing:
            raise PortableError(f"fact {fid!r} cites turns that are not in the file: {missing[:5]}")
    seqs = [e.seq for e in snap.edits.values()]
    if len(seqs) != len(set(seqs)):
        raise PortableError("two edits share a seq number; the audit log must be a sequence")


def loads(text: str) -> UserExport:
    return parse_lines(text.splitlines())


def full_changeset(data: UserExport) -> ChangeSet:
    """The one commit that writes ``data`` into a store where the user does not exist yet."""
    empty = Snapshot(user_id=data.snapshot.user_id)
    cs = diff(empty, data.snapshot, data.turns, data.embeddings)
    cs.new_version = max(data.snapshot.version, 1)  # keep the exported version
    return cs


def merged(current: Snapshot, data: UserExport) -> Snapshot:
    """``current`` with everything of ``data`` added (``mode='merge'``): allowed only when no id of the
    file exists in ``current`` (the root concept aside, which both share), so nothing is overwritten.
    The file's edits follow the user's own in the audit log, their order kept, renumbered."""
    s, d = current.clone(), data.snapshot
    clash = sorted((set(d.concepts) - {d.root_id}) & set(s.concepts)) + sorted(set(d.facts) & set(s.facts)) \
        + sorted(set(d.edits) & set(s.edits)) + sorted(d.turn_ids & s.turn_ids) + sorted(set(d.sessions) & set(s.sessions))
    if clash:
        raise ImportRefused(f"cannot merge: {len(clash)} id(s) of the file already exist for user {s.user_id!r} "
                            f"(e.g. {', '.join(clash[:3])}); use --replace, or merge a file without them")
    for cid, c in d.concepts.items():
        if cid != d.root_id or cid not in s.concepts:
            s.concepts[cid] = c
    s.parent.update(d.parent)
    s.fact_concept.update(d.fact_concept)
    s.facts.update(d.facts)
    s.relations.update(d.relations)
    s.turn_ids |= d.turn_ids
    s.sessions.update(d.sessions)
    base = s.next_edit_seq
    for i, e in enumerate(sorted(d.edits.values(), key=lambda e: (e.seq, e.edit_id))):
        s.edits[e.edit_id] = e.model_copy(update={"seq": base + i})
    try:
        check_invariants(s)
    except EditRejected as e:
        raise ImportRefused(f"cannot merge: the result would be inconsistent: {e}") from None
    return s


def import_user(store: GraphStore, data: UserExport, mode: ImportMode = "new",
                embed: Callable[[list[str]], list[list[float]]] | None = None) -> ChangeSet:
    """Write ``data`` as one commit. ``mode='new'`` refuses a user that exists in ``store``;
    ``'replace'`` swaps the user's memory for the file's in one transaction (``GraphStore.replace_user``);
    ``'merge'`` adds the file to the user's memory when no id clashes (see ``merged``).
    Facts without an embedding get one from ``embed`` when given."""
    u = data.snapshot.user_id
    missing = sorted(f for f in data.snapshot.facts if f not in data.embeddings)
    if missing and embed is not None:
        vecs = embed([data.snapshot.facts[f].statement for f in missing])
        data = UserExport(data.snapshot, data.turns, {**data.embeddings, **dict(zip(missing, vecs))})
    cs = full_changeset(data)
    if u in store.users():
        if mode == "merge":  # one ordinary versioned commit on top of the user's memory
            current = store.load_snapshot(u)
            cs = diff(current, merged(current, data), data.turns, data.embeddings)
            store.commit(cs)
            return cs
        if mode != "replace":
            raise ImportRefused(f"user {u!r} already has memories in this store; import with --replace to "
                                "overwrite them, or --merge to add to them")
        store.replace_user(cs)  # purge and write in one transaction: a crash leaves old or new, never none
        return cs
    store.commit(cs)
    return cs
