"""Purge means gone from disk: rewrite the store into a fresh file and swap it in atomically.

LadybugDB deletes by marking rows dead; their strings stay in the data file's pages (and in the
WAL until a checkpoint) until reused, so a purged user's text is readable with ``grep -a``. After
a purge commits, ``compact`` copies every live row into a new file next to the store, closes both,
and ``os.replace``s the new file over the old: the old file's bytes leave the file system's
namespace with its inode. Per-user encryption would also do it, but then the stored text is
ciphertext, which user Cypher and BM25 over the store cannot read.

Crash safety: a marker file (``<store>.purge-pending``) is fsynced before the purge transaction
and removed only after the swap, and every open finishes a pending compaction, so a kill -9 at any
instant leaves either the old file (the purge is committed in it or not) plus the marker, or the
compacted file. The copy is built under another name, so a half-built copy is never the store;
``recovery.open_database`` deletes it. The swap happens only when the old store closed with no WAL
(checkpointed), so no WAL of the old file can ever be replayed onto the new one.

Cost: the whole store is copied on every purge that deleted something: 1.1-1.5 s for 900 facts,
5-7 s for 3,000 on two shared cores (bench/commit_latency.py --purges); commits are unaffected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from graph.embedded import queries as Q
from graph.embedded.recovery import compact_path, fsync_dir, remove_store_files
from graph.store import StoreError

BATCH = 2000


def marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".purge-pending")


def mark_purge_pending(path: Path) -> None:
    m = marker_path(path)
    with open(m, "wb") as f:
        os.fsync(f.fileno())
    fsync_dir(m.parent)


def purge_pending(path: Path) -> bool:
    return marker_path(path).exists()


def clear_purge_pending(path: Path) -> None:
    marker_path(path).unlink(missing_ok=True)
    fsync_dir(path.parent)


def _value(v: Any) -> Any:
    # TIMESTAMPs travel as naive-UTC ISO strings and are CAST back (an all-null column binds as STRING).
    if isinstance(v, datetime):
        return (v.astimezone(timezone.utc).replace(tzinfo=None) if v.tzinfo else v).isoformat()
    return v


def _propmap(cols: list[tuple[str, str]]) -> str:
    if not cols:
        return ""
    return "{" + ", ".join(f"{c}: CAST(r.{c} AS {t})" for c, t in cols) + "}"


def _stream(conn: Any, query: str) -> Iterator[list[Any]]:
    res = conn.execute(query)
    while res.has_next():
        yield res.get_next()


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    buf: list[dict[str, Any]] = []
    for r in rows:
        buf.append(r)
        if len(buf) >= BATCH:
            yield buf
            buf = []
    if buf:
        yield buf


def _columns(conn: Any, table: str) -> list[tuple[str, str]]:
    return [(r[1], r[2]) for r in conn.execute(Q.TABLE_INFO.format(table=table)).get_all()]


def copy_all(src: Any, dst: Any) -> dict[str, int]:
    """Copy every node and relationship from connection ``src`` into ``dst`` (same schema already
    created there); returns rows copied per table."""
    tables = src.execute(Q.SHOW_TABLES).get_all()
    wanted = {name for name, _ in dst.execute(Q.SHOW_TABLES).get_all()}
    missing = sorted({name for name, _ in tables} - wanted)
    if missing:  # never drop data silently: the copy must hold every table the store holds
        raise StoreError(f"compaction target lacks tables {missing}")
    out: dict[str, int] = {}
    for name, kind in sorted(tables, key=lambda t: t[1] != "NODE"):  # nodes before the rels that need them
        cols = _columns(src, name)
        out[name] = 0
        if kind == "NODE":
            read = Q.COPY_READ_NODES.format(label=name, cols=", ".join(f"n.{c}" for c, _ in cols))
            write = Q.COPY_WRITE_NODES.format(label=name, props=_propmap(cols))
            rows = ({c: _value(v) for (c, _), v in zip(cols, r)} for r in _stream(src, read))
        else:
            s, d, spk, dpk = src.execute(Q.SHOW_CONNECTION.format(table=name)).get_all()[0][:4]
            read = Q.COPY_READ_RELS.format(src=s, rel=name, dst=d, spk=spk, dpk=dpk,
                                           cols="".join(f", e.{c}" for c, _ in cols))
            write = Q.COPY_WRITE_RELS.format(src=s, rel=name, dst=d, spk=spk, dpk=dpk, props=_propmap(cols))
            rows = ({"a": r[0], "b": r[1], **{c: _value(v) for (c, _), v in zip(cols, r[2:])}}
                    for r in _stream(src, read))
        for chunk in _batches(rows):
            dst.execute("BEGIN TRANSACTION")
            dst.execute(write, {"rows": chunk})
            dst.execute("COMMIT")
            out[name] += len(chunk)
    return out


def build_copy(src_conn: Any, path: Path, schema: list[str]) -> dict[str, int]:
    """A compacted copy of the open store at ``compact_path(path)``, closed with no WAL left."""
    import ladybug

    target = compact_path(path)
    remove_store_files(target)
    db = ladybug.Database(str(target))
    conn = ladybug.Connection(db)
    try:
        for stmt in schema:
            conn.execute(stmt)
        counts = copy_all(src_conn, conn)
        conn.execute(Q.CHECKPOINT)
    except BaseException:
        conn.close()
        db.close()
        remove_store_files(target)
        raise
    conn.close()
    db.close()
    with open(target, "rb+") as f:
        os.fsync(f.fileno())
    return counts


def swap_in(path: Path) -> None:
    """Replace the (closed) store file with its compacted copy. Refuses while either has a WAL:
    a WAL belongs to one file and must never be replayed onto the other."""
    target = compact_path(path)
    for wal in (path.with_name(path.name + ".wal"), target.with_name(target.name + ".wal")):
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(f"compaction: {wal} is not empty after a checkpoint; the store was left as is")
    os.replace(target, path)
    fsync_dir(path.parent)
    remove_store_files(target)  # lock/shadow leftovers of the copy, if the engine kept any
