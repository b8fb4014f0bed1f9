"""One sandbox worker process: user Cypher on per-user in-memory LadybugDB copies, under OS limits.

The engine is native code: a query can crash it (a segfault), hold it at bind time where no timeout
reaches, or allocate gigabytes in one step. So it never runs in the server: graph/cypher/pool.py
starts a few of these processes and talks to them over stdin/stdout, and a worker that crashes, runs
past its wall deadline or its CPU budget is killed and replaced; only its caller gets an error.

Limits, set per query: RLIMIT_AS (address space: what the query may allocate on top of what the
worker holds), RLIMIT_CPU (CPU seconds; SIGXCPU ends the worker) and the engine's own timeout with
an interrupt. The parent adds the wall deadline (it kills the worker). Core dumps are off.

Run by the pool as ``python -I graph/cypher/worker.py`` (stdlib and ladybug only, so it starts in a
fraction of a second and needs no project import). Protocol: a 4-byte big-endian length, then one
JSON object, each way. Requests: ``init`` (schema and load statements), ``run``, ``load``. Replies:
``{"ok": ...}``, ``{"need": true}`` (no copy of this user's data yet) or ``{"err": kind, "msg": ...}``.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import threading
from collections import OrderedDict
from datetime import date, datetime, time, timedelta
from typing import Any, BinaryIO

TAG = "\x00evomem"  # marks an encoded engine value; no Cypher map key can hold a NUL character


def encode(v: Any) -> Any:
    """Engine values as JSON, keeping dates and durations (the parent decodes them back)."""
    if isinstance(v, dict):
        if "_NODES" in v and "_RELS" in v:
            return {"nodes": [encode(n) for n in v["_NODES"]], "relationships": [encode(r) for r in v["_RELS"]]}
        if "_LABEL" in v and "_ID" in v:  # a node or relationship: its properties, Neo4j-like
            props = {k: encode(x) for k, x in v.items() if not k.startswith("_") and x is not None}
            return {"type": v["_LABEL"], **props} if "_SRC" in v else {"labels": [v["_LABEL"]], **props}
        return {str(k): encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else {TAG: "float", "v": repr(v)}
    if isinstance(v, datetime):
        return {TAG: "datetime", "v": v.isoformat()}
    if isinstance(v, date):
        return {TAG: "date", "v": v.isoformat()}
    if isinstance(v, time):
        return {TAG: "time", "v": v.isoformat()}
    if isinstance(v, timedelta):
        return {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]}
    return str(v)


def decode(v: Any) -> Any:
    if isinstance(v, dict):
        tag = v.get(TAG)
        if tag is not None and len(v) == 2:
            x = v["v"]
            if tag == "datetime":
                return datetime.fromisoformat(x)
            if tag == "date":
                return date.fromisoformat(x)
            if tag == "time":
                return time.fromisoformat(x)
            if tag == "timedelta":
                return timedelta(days=x[0], seconds=x[1], microseconds=x[2])
            if tag == "float":
                return float(x)
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


def send(out: BinaryIO, msg: dict[str, Any]) -> None:
    body = json.dumps(msg, separators=(",", ":")).encode()
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()


def receive(inp: BinaryIO) -> dict[str, Any] | None:
    head = inp.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack(">I", head)
    body = inp.read(n)
    if len(body) < n:
        return None
    msg = json.loads(body)
    assert isinstance(msg, dict)
    return msg


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Worker:
    def __init__(self, init: dict[str, Any]):
        import ladybug

        self.ladybug = ladybug
        self.schema: list[str] = init["schema"]
        self.load_order: list[str] = init["load_order"]
        self.loads: dict[str, str] = init["loads"]
        self.max_boxes: int = init["max_boxes"]
        self.pool_mb: int = init["buffer_pool_mb"]
        self.db_mb: int = init["max_db_mb"]
        self.boxes: OrderedDict[str, tuple[Any, Any]] = OrderedDict()

    def _new_box(self) -> tuple[Any, Any]:
        db = self.ladybug.Database(":memory:", buffer_pool_size=self.pool_mb << 20, max_num_threads=1,
                                   max_db_size=self.db_mb << 20)
        conn = self.ladybug.Connection(db)
        for stmt in self.schema:
            conn.execute(stmt)
        return db, conn

    def load(self, key: str, user: str, rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        for k in [k for k in self.boxes if k.split("\x00", 1)[0] == user]:
            del self.boxes[k]  # older copies of this user are stale
        db, conn = self._new_box()
        for name in self.load_order:
            if rows.get(name):
                conn.execute(self.loads[name], {"rows": rows[name]})
        self.boxes[key] = (db, conn)
        while len(self.boxes) > self.max_boxes:
            self.boxes.popitem(last=False)
        return {"ok": True}

    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        box = self.boxes.get(msg["key"])
        if box is None:
            return {"need": True}
        self.boxes.move_to_end(msg["key"])
        conn = box[1]
        timeout_s = float(msg["timeout_s"])
        conn.set_query_timeout(int(timeout_s * 1000))
        conn.execute("BEGIN TRANSACTION READ ONLY")
        # the engine checks its timeout between batches; the interrupt covers a step that runs long
        dog = threading.Timer(timeout_s + 0.25, conn.interrupt)
        soft_as, hard_as = resource.getrlimit(resource.RLIMIT_AS)
        soft_cpu, hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)
        cap = _vm_bytes() + (int(msg["memory_mb"]) << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard_as == resource.RLIM_INFINITY else min(cap, hard_as), hard_as))
        resource.setrlimit(resource.RLIMIT_CPU, (int(_cpu_s() + float(msg["cpu_s"])) + 1, hard_cpu))
        dog.start()
        try:
            res = conn.execute(msg["text"], msg["params"])
            out: list[Any] = []
            while res.has_next() and len(out) <= int(msg["max_rows"]):
                out.append(encode(list(res.get_next())))
            body = json.dumps({"ok": out}, separators=(",", ":"))
            if len(body) > int(msg["max_reply_bytes"]):
                return {"err": "size", "msg": f"the result is larger than {int(msg['max_reply_bytes']) >> 20} MB"}
            return {"raw": body}
        except MemoryError:
            return {"err": "memory", "msg": "out of memory"}
        except RuntimeError as e:
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            kind = "memory" if "bad_alloc" in text or "allocate" in text.lower() else "engine"
            return {"err": kind, "msg": text}
        finally:
            dog.cancel()
            resource.setrlimit(resource.RLIMIT_AS, (soft_as, hard_as))
            resource.setrlimit(resource.RLIMIT_CPU, (soft_cpu, hard_cpu))
            try:
                conn.execute("ROLLBACK")
            except RuntimeError:
                pass


def main() -> int:
    # the protocol gets its own descriptor; anything the engine prints goes to stderr instead
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    init = receive(inp)
    if init is None or init.get("op") != "init":
        return 2
    worker = Worker(init)
    send(out, {"ok": True, "pid": os.getpid()})
    while True:
        msg = receive(inp)
        if msg is None:
            return 0  # the server went away
        if msg["op"] == "load":
            try:
                reply = worker.load(msg["key"], msg["user"], msg["rows"])
            except (RuntimeError, MemoryError) as e:
                reply = {"err": "engine", "msg": f"loading the user's copy failed: {e}"}
        else:
            reply = worker.run(msg)
        if "raw" in reply:
            body = reply["raw"].encode()
            out.write(struct.pack(">I", len(body)) + body)
            out.flush()
        else:
            send(out, reply)
        if reply.get("err") == "memory":
            return 3  # a worker that hit its memory cap is replaced rather than trusted


if __name__ == "__main__":
    sys.exit(main())
