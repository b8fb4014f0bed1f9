"""Data subcommands: profile (a user's memory at a glance), export, import and migrate (graph/portable.py)."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from evomem.cliargs import positional
from evomem.commands.common import Command, CommonOptions, _print
from evomem.errors import UsageError


class ProfileOptions(CommonOptions):
    user: str = Field(description="User id.")
    latest: int = Field(default=10, ge=0, description="How many recent changes to list.")
    as_of: datetime | None = Field(default=None, description="Valid time (ISO date): what was true then.")
    known_at: datetime | None = Field(default=None, description="Recorded time (ISO date): what memory knew then.")


def cmd_profile(opts: ProfileOptions) -> int:
    from graph.timeline import TimeView
    from memcore.memory import Memory
    from memcore.profile import build_profile

    mem = Memory.from_settings(opts.settings())
    try:
        prof = build_profile(mem, opts.user, opts.latest, TimeView(as_of=opts.as_of, known_at=opts.known_at))
    finally:
        mem.close()
    _print(opts, prof.model_dump(mode="json"), prof.text)
    return 0


class FactsOptions(CommonOptions):
    user: str = Field(description="User id.")
    include: str | None = Field(default=None, description="Comma-separated validities to show besides current: "
                                "superseded, disputed, expired, retracted, or all.")
    as_of: datetime | None = Field(default=None, description="Valid time (ISO date): states as they were then.")
    known_at: datetime | None = Field(default=None, description="Recorded time (ISO date): what memory knew then.")


def cmd_facts(opts: FactsOptions) -> int:
    from graph.timeline import TimeView, parse_include, states_at
    from memcore.memory import Memory

    shown = parse_include(opts.include)
    mem = Memory.from_settings(opts.settings())
    try:
        mem.require_user(opts.user)
        snap = mem.store.load_snapshot(opts.user)
    finally:
        mem.close()
    rows = sorted(((f, st) for f, st in states_at(snap, TimeView(as_of=opts.as_of, known_at=opts.known_at)).values()
                   if st.validity in shown), key=lambda x: x[0].fact_id)
    _print(opts, {"user_id": opts.user, "facts": [{"fact": f.model_dump(mode="json"), "state": st.model_dump(mode="json")}
                                                  for f, st in rows]},
           lambda: "\n".join(f"{st.validity:<11} {f.fact_id}  {f.statement}" for f, st in rows) or "(no facts)")
    return 0


class ExportOptions(CommonOptions):
    user: str = Field(description="User id.")
    out: str = Field(description="Output file (JSON Lines, format evomem-export v1, see graph/portable.py); - = stdout.")


class ImportOptions(CommonOptions):
    file: str = Field(**positional("An export file written by `evomem export`."))
    replace: bool = Field(default=False, description="Overwrite the user if it already has memories here "
                          "(its previous memory is written back if the import fails).")
    merge: bool = Field(default=False, description="Add the file to the user's existing memory (refused if any id "
                        "of the file exists there already).")


class MigrateOptions(CommonOptions):
    to: str = Field(description="Target store: neo4j://host:port or bolt://… (Neo4j), or embedded:PATH; with "
                    "--store partitioned, a server name of the partition map moves each --user there (export, import, "
                    "verify byte-identical, update the map, then delete from the source).")
    to_neo4j_user: str | None = Field(default=None, description="Target Neo4j user (default: EVOMEM_NEO4J_USER).")
    to_neo4j_password: str | None = Field(default=None, description="Target Neo4j password (default: "
                                          "EVOMEM_NEO4J_PASSWORD).")
    user: list[str] | None = Field(default=None, description="Users to migrate (default: all of them).")
    replace: bool = Field(default=False, description="Overwrite users the target already has.")


def _open_source(opts: CommonOptions, dim: int | None = None) -> Any:
    from memcore.stores import open_store

    settings = opts.settings()
    return open_store(settings.store, dim or settings.embedder.dim)


def _write_atomically(path: str, text: str) -> None:
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)  # never a half-written export under the real name


def cmd_export(opts: ExportOptions) -> int:
    from graph.portable import dumps, read_user

    store = _open_source(opts)
    try:
        data = read_user(store, opts.user)
    finally:
        store.close()
    text = dumps(data)
    if opts.out == "-":
        sys.stdout.write(text)
        return 0
    _write_atomically(opts.out, text)
    counts = {"facts": len(data.snapshot.facts), "turns": len(data.turns), "edits": len(data.snapshot.edits),
              "concepts": len(data.snapshot.concepts), "relations": len(data.snapshot.relations),
              "sessions": len(data.snapshot.sessions)}
    _print(opts, {"user_id": opts.user, "out": opts.out, "counts": counts, "bytes": len(text.encode())},
           lambda: f"exported {opts.user} to {opts.out}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0


def cmd_import(opts: ImportOptions) -> int:
    from graph.portable import import_user, parse_lines
    from induction.redact import redact_export
    from llmclients.embeddings import make_embedder

    with open(opts.file, encoding="utf-8") as fh:
        data = parse_lines(line.rstrip("\n") for line in fh)
    settings = opts.settings()
    # secrets in the file are cut out before anything is written (induction/redact.py); the facts whose
    # statement changed are embedded again from the redacted text
    data, redacted = redact_export(data, settings.ingest.redact)
    dims = {len(v) for v in data.embeddings.values()}

    def embed(texts: list[str]) -> list[list[float]]:  # only for facts exported without an embedding
        return [[float(x) for x in v] for v in make_embedder(settings.embedder).embed(texts)]

    store = _open_source(opts, dims.pop() if dims else None)
    try:
        if opts.replace and opts.merge:
            raise UsageError("give --replace or --merge, not both")
        cs = import_user(store, data, "replace" if opts.replace else "merge" if opts.merge else "new", embed)
    finally:
        store.close()
    u = data.snapshot.user_id
    out = {"user_id": u, "facts": len(cs.facts_create), "turns": len(cs.turns_create), "edits": len(cs.edits_upsert),
           "version": cs.new_version, "replaced": bool(opts.replace), "merged": bool(opts.merge),
           "redacted": redacted}
    _print(opts, out, lambda: f"imported {u}: {out['facts']} facts, {out['turns']} turns, {out['edits']} edits "
           f"(version {cs.new_version})" + (f"; secrets redacted before storage: {sum(redacted.values())} ("
                                            + ", ".join(f"{k} {n}" for k, n in redacted.items()) + ")"
                                            if redacted else ""))
    return 0


def target_config(opts: MigrateOptions) -> Any:
    from memcore.stores import StoreConfig

    to = opts.to
    if to.startswith("embedded:"):
        return StoreConfig(backend="embedded", path=to.removeprefix("embedded:"))
    if to.split("://", 1)[0] in ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"):
        env = os.environ
        return StoreConfig(backend="neo4j", neo4j_uri=to, neo4j_user=opts.to_neo4j_user or env.get("EVOMEM_NEO4J_USER"),
                           neo4j_password=opts.to_neo4j_password or env.get("EVOMEM_NEO4J_PASSWORD"))
    raise UsageError(f"--to {to!r}: give neo4j://host:port, bolt://host:port or embedded:PATH (or, with --store "
                     "partitioned, a server name of the partition map)")


def _migrate_partition(opts: MigrateOptions, settings: Any) -> int:
    """Move users between the servers of a partitioned store (graph/partition.py: migrate_user)."""
    from graph.partition import migrate_user
    from memcore.stores import open_store

    if not opts.user:
        raise UsageError("name the users to move with --user (a move between servers is per user)")
    store = open_store(settings.store, settings.embedder.dim)
    report: list[dict[str, Any]] = []
    try:
        for u in opts.user:
            report.append(migrate_user(store, u, opts.to))  # type: ignore[arg-type]
    finally:
        store.close()
    _print(opts, {"to": opts.to, "users": report}, lambda: "\n".join(
        (f"moved {r['user_id']} from {r['from']} to {r['to']}: verified identical ({r['bytes']} bytes), "
         f"{r['source_nodes_deleted']} nodes deleted from {r['from']}") if r["moved"] else
        (f"{r['user_id']} is already on {r['to']}" + (f"; stale copies removed from {sorted(r['stale_copies_removed'])}"
                                                      if r["stale_copies_removed"] else "")) for r in report))
    return 0


def cmd_migrate(opts: MigrateOptions) -> int:
    from graph.portable import dumps, import_user, loads, read_user
    from memcore.stores import open_store

    settings = opts.settings()
    part = settings.store.partitions if settings.store.backend == "partitioned" else None
    if part is not None and opts.to in {s.name for s in part.servers}:
        return _migrate_partition(opts, settings)
    cfg = target_config(opts)
    src = _open_source(opts)
    try:
        users = opts.user or src.users()
        texts = {u: dumps(read_user(src, u)) for u in users}
    finally:
        src.close()
    parsed = {u: loads(t) for u, t in texts.items()}
    dims = {len(v) for d in parsed.values() for v in d.embeddings.values()}
    if len(dims) > 1:
        raise UsageError(f"the users' embeddings have different sizes {sorted(dims)}; migrate them separately")
    dst = open_store(cfg, dims.pop() if dims else opts.settings().embedder.dim)
    report: list[dict[str, Any]] = []
    try:
        for u in users:
            cs = import_user(dst, parsed[u], "replace" if opts.replace else "new")
            # proof: the target exports the very same bytes (ids, audit log, embeddings, versions)
            same = dumps(read_user(dst, u)) == texts[u]
            report.append({"user_id": u, "facts": len(cs.facts_create), "edits": len(cs.edits_upsert),
                           "verified": same})
            if not same:
                raise UsageError(f"user {u!r} was written to {opts.to} but reads back differently; please report")
    finally:
        dst.close()
    _print(opts, {"to": opts.to, "users": report}, lambda: "\n".join(
        f"migrated {r['user_id']}: {r['facts']} facts, {r['edits']} edits, verified identical" for r in report)
        or "(no users)")
    return 0


COMMANDS: dict[str, Command] = {
    "export": (ExportOptions, cmd_export, "Write one user's memory to a versioned JSON Lines file."),
    "import": (ImportOptions, cmd_import, "Read an `evomem export` file into the store (one transaction)."),
    "migrate": (MigrateOptions, cmd_migrate, "Copy users to another store (embedded <-> Neo4j), ids and audit "
                "log kept, verified byte for byte; or move users between partitioned Neo4j servers."),
    "facts": (FactsOptions, cmd_facts, "List a user's facts with states: current only unless --include widens it."),
    "profile": (ProfileOptions, cmd_profile, "A user's current facts by concept, counts per validity, latest changes."),
}
