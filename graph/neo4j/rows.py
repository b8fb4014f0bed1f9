"""Rows to and from the server: a ChangeSet as the rows of queries.WRITE_PHASES, cut into bounded
statements (issue 45: bulk writes); times and embeddings as stored; the full-text query.

Every kind of row (turns, facts with their embeddings, concepts, edges, the edit log) goes through UNWIND
in chunks of ``CHUNK_ROWS``: a commit or an import is one statement per kind of row (per chunk), never
one per row.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from graph.bm25 import tokenize
from graph.models import as_utc
from graph.neo4j import queries as Q
from graph.serialize import concept_row, edit_row, fact_row, session_key, turn_key, turn_row
from graph.snapshot import ChangeSet


def _escape(term: str) -> str:
    return re.sub(r'([+\-&|!(){}\[\]^"~*?:\\/])', r"\\\1", term)


def lucene_query(text: str, user_id: str | None = None) -> str:
    r"""OR of the query's content words, each escaped: user text never reaches Lucene syntax.
    With ``user_id``, a phrase clause on the user field narrows the search to that user's facts.

    >>> lucene_query('hiking AND "knee"*')
    'statement:(hiking OR knee)'
    >>> lucene_query('hiking', 'u"1')
    'user_id:"u\\"1" AND statement:(hiking)'
    """
    words = " OR ".join(_escape(w) for w in dict.fromkeys(tokenize(text)))
    if not words:
        return ""
    clause = f"statement:({words})"
    return f'user_id:"{_escape(user_id)}" AND {clause}' if user_id else clause


def unpack_embedding(v: bytes | Sequence[float]) -> np.ndarray:
    """A stored embedding as float32: bytes, or the float list earlier versions stored (read as float32,
    the precision every embedding is exported with).

    >>> unpack_embedding([0.5, -1.0]).dtype
    dtype('float32')
    """
    if isinstance(v, (bytes, bytearray)):
        return np.frombuffer(v, dtype="<f4").astype(np.float32)
    return np.asarray(v, dtype=np.float32)


def pack_embedding(vec: Sequence[float] | None) -> bytes | None:
    """An embedding as stored: little-endian float32 bytes, as the embedded store and the export keep it.

    >>> np.frombuffer(pack_embedding([0.5, -1.0]), dtype="<f4").tolist()
    [0.5, -1.0]
    """
    return None if vec is None else np.asarray(vec, dtype="<f4").tobytes()


# Rows per write statement: a 10,000-fact import sends its facts in two statements, each a bounded
# message and server-side batch.
CHUNK_ROWS = 10_000


def _text(row: dict[str, Any], props: tuple[str, ...]) -> dict[str, Any]:
    """``row`` with its times as ISO text in UTC (the write statements turn them into DateTime)."""
    for p in props:
        v = row.get(p)
        if isinstance(v, datetime):
            row[p] = as_utc(v).isoformat()
    return row


_NANOS = re.compile(r"(\.\d{6})\d+")


def parse_times(row: dict[str, Any], props: tuple[str, ...]) -> dict[str, Any]:
    """``row`` with the times a read returned as text (queries.as_text) as datetimes: what the driver would
    have made of them, at a fraction of its CPU. Nanoseconds are cut to microseconds, a zone id dropped
    (its offset is in the text).

    >>> parse_times({"at": "2025-01-01T03:04:05.123456789Z[UTC]", "x": None}, ("at", "x"))["at"].isoformat()
    '2025-01-01T03:04:05.123456+00:00'
    >>> parse_times({"at": "2025-01-01T03:04:05"}, ("at",))["at"].isoformat()  # a LocalDateTime: UTC
    '2025-01-01T03:04:05+00:00'
    """
    for p in props:
        v = row.get(p)
        if isinstance(v, str):
            row[p] = as_utc(datetime.fromisoformat(_NANOS.sub(r"\1", v.split("[", 1)[0])))
    return row


def write_rows(cs: ChangeSet) -> dict[str, list[Any]]:
    """``cs`` as rows for queries.WRITE_PHASES: one list per phase, in that order."""
    u = cs.user_id

    def rels(rs: Sequence[Any], kind: str, *keys: str) -> list[dict[str, Any]]:
        return [_text({"src": r.src, "dst": r.dst, **{k: getattr(r, k) for k in keys}}, Q.REL_TIMES)
                for r in rs if r.type == kind]

    rows: dict[str, list[Any]] = {
        "turns": [_text(turn_row(t), Q.TURN_TIMES) for t in cs.turns_create],
        "sessions": [{"key": session_key(u, s), "session_id": s, "content_hash": h} for s, h in cs.sessions_upsert.items()],
        "concepts": [_text(concept_row(c), Q.CONCEPT_TIMES) for c in cs.concepts_upsert],
        "facts_create": [_text({**fact_row(f), "embedding": pack_embedding(cs.embeddings.get(f.fact_id))}, Q.FACT_TIMES)
                         for f in cs.facts_create],
        "facts_update": [_text(fact_row(f), Q.FACT_TIMES) for f in cs.facts_update],
        "parent_remove": [{"p": p, "c": c} for p, c in cs.parent_remove],
        "contains_remove": [{"c": c, "f": f} for c, f in cs.contains_remove],
        "supersedes_remove": rels(cs.relations_remove, "SUPERSEDES"),
        "conflicts_remove": rels(cs.relations_remove, "CONFLICTS_WITH"),
        "supersedes_add": rels(cs.relations_add, "SUPERSEDES", "at", "reason"),
        "conflicts_add": rels(cs.relations_add, "CONFLICTS_WITH", "at", "reason", "resolved_at"),
        "conflicts_update": rels(cs.relations_update, "CONFLICTS_WITH", "reason", "resolved_at"),
        "parent_add": [{"p": p, "c": c} for p, c in cs.parent_add],
        "contains_add": [{"c": c, "f": f} for c, f in cs.contains_add],
        "derived_add": [{"f": f, "t": turn_key(u, t)} for f, t in cs.derived_from_add],
        "edits_create": [_text(edit_row(e), Q.EDIT_TIMES) for e in cs.edits_upsert if e.edit_id in cs.edits_new],
        "edits": [_text(edit_row(e), Q.EDIT_TIMES) for e in cs.edits_upsert if e.edit_id not in cs.edits_new],
        "facts_delete": list(cs.facts_delete),
        "concepts_delete": list(cs.concepts_delete),
    }
    assert tuple(rows) == tuple(name for name, _ in Q.WRITE_PHASES)
    return rows


def chunks(rows: list[Any], limit: int) -> Iterator[list[Any]]:
    """``rows`` in pieces of at most ``limit`` (none for no rows): one statement each.

    >>> [len(c) for c in chunks(list(range(5)), 2)], list(chunks([], 2))
    ([2, 2, 1], [])
    """
    step = max(1, limit)
    for at in range(0, len(rows), step):
        yield rows[at: at + step]
