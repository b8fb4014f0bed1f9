"""Two OS processes on one Neo4j (issue 10, item 9): the worker each process runs, and the checker.

Run as a script, this is one worker: a Memory over its own Neo4jStore that loops ingest / supersede /
read / purge on a few shared users until a deadline and writes one JSON line per operation, with
CLOCK_MONOTONIC start/end times (one clock for every process on the machine). ``check`` is pure: it
takes both workers' events and the final state and counts stale reads and lost or phantom writes.
Used by tests/test_multiprocess_neo4j.py.
"""

from __future__ import annotations

import argparse
import traceback
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass
class Report:
    ops: dict[str, int] = field(default_factory=dict)  # acknowledged operations by kind
    refused: dict[str, int] = field(default_factory=dict)  # operations that raised, by error type
    reads_checked: int = 0
    stale_purged: list[str] = field(default_factory=list)  # a read after an acked purge returned a purged fact
    stale_superseded: list[str] = field(default_factory=list)  # a read after an acked supersession: old is current
    missing_in_read: list[str] = field(default_factory=list)  # a read after an acked write lacked it
    lost: list[str] = field(default_factory=list)  # acked, never purged, absent at the end
    phantom: list[str] = field(default_factory=list)  # present at the end, never acknowledged
    version_clash: list[str] = field(default_factory=list)  # two acked commits produced one (user, version)

    @property
    def violations(self) -> int:
        return sum(len(x) for x in (self.stale_purged, self.stale_superseded, self.missing_in_read, self.lost,
                                    self.phantom, self.version_clash))


def check(events: list[dict[str, Any]], final: dict[str, set[str]], serialize: bool = False) -> Report:
    """Count violations. ``final``: user -> fact ids stored at the end (after both workers exited).

    A purge P removed an acked write W for sure if W ended before P started; it may have removed it if
    they overlap. A read R must not show W's fact if some purge P ended before R started and W ended
    before P started; it must show W's fact if W ended before R started and no purge overlaps [W.s, R.e].
    """
    rep = Report()
    writes = [e for e in events if e["op"] in ("ingest", "supersede") and e["ok"]]
    purges = [e for e in events if e["op"] == "purge" and e["ok"]]
    for e in events:
        bucket = rep.ops if e["ok"] else rep.refused
        key = e["op"] if e["ok"] else f"{e['op']}:{e.get('error')}"
        bucket[key] = bucket.get(key, 0) + 1
    by_user: dict[str, list[dict[str, Any]]] = {}
    for p in purges:
        by_user.setdefault(p["u"], []).append(p)
    write_of = {w["fid"]: w for w in writes}

    def purged_surely(w: dict[str, Any], before: float) -> bool:
        return any(p["e"] < before and w["e"] < p["s"] for p in by_user.get(w["u"], ()))

    def maybe_purged(w: dict[str, Any], until: float) -> bool:
        return any(p["e"] > w["s"] and p["s"] < until for p in by_user.get(w["u"], ()))

    for r in (e for e in events if e["op"] == "read" and e["ok"]):
        rep.reads_checked += 1
        seen = {fid: v for fid, v in r["facts"]}
        for fid, validity in seen.items():
            w = write_of.get(fid)
            if w is not None and purged_surely(w, r["s"]):
                rep.stale_purged.append(f"{r['proc']}@{r['s']:.3f} {fid}")
            if validity == "current":
                sup = [s for s in writes if s["op"] == "supersede" and s["old"] == fid and s["e"] < r["s"]]
                if sup:
                    rep.stale_superseded.append(f"{r['proc']}@{r['s']:.3f} {fid} (by {sup[0]['fid']})")
        for w in writes:
            if w["u"] == r["u"] and w["e"] < r["s"] and not maybe_purged(w, r["e"]) and w["fid"] not in seen:
                rep.missing_in_read.append(f"{r['proc']}@{r['s']:.3f} {w['fid']}")
    acked = set(write_of)
    for w in writes:
        if not maybe_purged(w, float("inf")) and w["fid"] not in final.get(w["u"], set()):
            rep.lost.append(w["fid"])
    for u, fids in final.items():
        rep.phantom += sorted(f for f in fids if f not in acked)
    if serialize:
        seen_v: dict[tuple[str, int], str] = {}
        for w in writes:
            k = (w["u"], w["v"])
            if k in seen_v:
                rep.version_clash.append(f"{w['u']} v{w['v']}: {seen_v[k]} and {w['fid']}")
            seen_v[k] = w["fid"]
    return rep


def _worker(a: argparse.Namespace) -> None:
    from memcore.memory import Memory
    from graph.edits import AttachFact, EditBatch, Supersede
    from graph.models import Fact
    from graph.neo4j import Neo4jStore
    from retrieval.retrieve import RetrievalConfig
    from graph.store import UnknownUser
    from llmclients.embeddings import HashEmbedder

    store = Neo4jStore(a.uri, embedding_dim=16)
    # Every fact is a seed (dense only, k above the facts a user can reach in a run): a read shows all.
    mem = Memory(store, HashEmbedder(16), RetrievalConfig(k=1000, dense_candidates=1000, text_candidates=0),
                 max_commit_retries=40)
    rng = random.Random(a.seed)
    users = a.users.split(",")
    weights = {"ingest": 1.0} if a.mode == "serialize" else {"ingest": .4, "supersede": .15, "read": .35, "purge": .1}
    latest: dict[str, str | None] = {u: None for u in users}  # this process's newest fact per user
    store.users()  # connected: tell the parent, which answers with the common start time
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    out = open(a.out, "w")
    n = 0
    while time.monotonic() < start:
        time.sleep(0.005)
    end = start + a.seconds
    while time.monotonic() < end:
        u = rng.choice(users)
        op = rng.choices(list(weights), list(weights.values()))[0]
        if op == "supersede" and latest[u] is None:
            op = "ingest"
        ev: dict[str, Any] = {"proc": a.proc, "op": op, "u": u}
        t0 = time.monotonic()
        try:
            if op in ("ingest", "supersede"):
                fid = f"{u}::f::{a.mode[0]}p{a.proc}n{n}"  # unique across phases and processes
                n += 1
                f = Fact(fact_id=fid, user_id=u, statement=f"memo p{a.proc} n{n} apples", kind="preference")
                edits: list[Any] = [AttachFact(fact=f, concept_id=f"{u}::root")]
                old = latest[u]
                if op == "supersede" and old is not None:
                    ev["old"] = old
                    edits.append(Supersede(new_fact_id=fid, old_fact_id=old, reason="newer"))
                ev["fid"] = fid
                _, cs = mem.apply(EditBatch(user_id=u, edits=edits))
                ev["v"] = cs.new_version
                latest[u] = fid
            elif op == "read":
                try:
                    items = mem.retrieve(u, "memo apples").items
                except UnknownUser:
                    items = []
                ev["facts"] = [(i.fact.fact_id, i.state.validity) for i in items]
            else:
                store.purge_user(u)
                latest[u] = None
            ev["ok"] = True
        except Exception as e:  # noqa: BLE001 - every refusal is recorded and counted by the checker
            ev["ok"], ev["error"] = False, getattr(e, "rule", type(e).__name__)
            if not hasattr(e, "rule"):  # an unexpected error: keep where it came from for the report
                ev["trace"] = traceback.format_exc(limit=-4)
            if op == "supersede":
                latest[u] = None  # its old fact was purged by the other process
        ev["s"], ev["e"] = t0, time.monotonic()
        out.write(json.dumps(ev) + "\n")
    out.close()
    store.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--uri", required=True)
    p.add_argument("--proc", type=int, required=True)
    p.add_argument("--users", required=True)
    p.add_argument("--mode", choices=["serialize", "mixed"], required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    _worker(p.parse_args())
