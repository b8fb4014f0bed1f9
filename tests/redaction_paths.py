"""The redaction corpus over every write path, and where a secret could be read afterwards (issue 43).

``run(work, redact=True)`` writes a corpus (tests/redaction_corpus.py) over each write path, each path
with secrets of its own (another seed), so a secret found names the path that let it through:

- ``session``: ``POST /v1/users/{u}/sessions`` on the in-process app (induction's pipeline);
- ``edits``: ``POST /v1/users/{u}/edits`` with the secret in every free-text field (turn text, concept
  name and description, fact statement, evidence, scope, holder, qualifiers, the four reasons);
- ``forget``: ``POST /v1/users/{u}/facts/{id}/forget`` with the secret as the reason;
- ``import``: an export file holding the secret in every free-text field, through ``evomem import``;
- ``mcp``: the MCP ``add_memory`` tool (the official SDK's client on the in-process server);
- ``http``: sessions and edit batches through a real ``evomem serve`` on 127.0.0.1 (debug logging).

Then it looks for every secret in the responses (the writes and reads back: facts, search, profile,
history, the Cypher route), in ``store.run_readonly_cypher`` over every node, in ``export_user``, in the
logs (the in-process log records and the server's log file) and in the raw bytes of each embedded store
directory after it was closed. ``redact=False`` is the control run: RedactConfig(enabled=False) in process,
and the detector stubbed out in the CLI import and in the live server (which has no switch for it).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import httpx
from redaction_corpus import Item, corpus, leaks, readable_bytes
from servers import free_port, start_api_server

PATHS = ("session", "edits", "forget", "import", "mcp", "http")
SURFACES = ("responses", "cypher", "exports", "logs", "store_files")
SEEDS = {p: 1000 + i for i, p in enumerate(PATHS)}


@dataclass
class PathResult:
    items: list[Item]
    readable: dict[str, set[int]] = field(default_factory=lambda: {s: set() for s in SURFACES})

    @property
    def readable_any(self) -> set[int]:
        return set().union(*self.readable.values())


@dataclass
class Result:
    redact: bool
    paths: dict[str, PathResult]
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        shapes = sorted({it.shape for p in self.paths.values() for it in p.items})
        per_shape = {s: {name: sum(1 for i in p.readable_any if p.items[i].shape == s) for name, p in self.paths.items()}
                     for s in shapes}
        return {"redaction": "on" if self.redact else "off (control)", "seconds": round(self.seconds, 1),
                "shapes": len(shapes), "secrets_per_path": {n: len(p.items) for n, p in self.paths.items()},
                "secrets_total": sum(len(p.items) for p in self.paths.values()),
                "readable_per_path": {n: len(p.readable_any) for n, p in self.paths.items()},
                "readable_per_path_and_surface": {n: {s: len(ix) for s, ix in p.readable.items()}
                                                  for n, p in self.paths.items()},
                "readable_per_shape": per_shape}


def _mark(res: PathResult, surface: str, haystack: str) -> None:
    for it in leaks(res.items, haystack):
        res.readable[surface].add(res.items.index(it))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a record that cannot format is still looked at raw
            self.lines.append(str(record.msg))


@contextmanager
def _captured_logs() -> Iterator[_Records]:
    h = _Records()
    h.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old = root.level
    root.addHandler(h)
    root.setLevel(logging.DEBUG)
    try:
        yield h
    finally:
        root.removeHandler(h)
        root.setLevel(old)


def raw_store_bytes(path: Path) -> bytes:
    """Every byte of an embedded store directory (and the files beside it named after it)."""
    files = [p for p in sorted(path.parent.iterdir()) if p.name.startswith(path.name) and p.is_file()]
    files += [p for p in sorted(path.rglob("*")) if p.is_file()] if path.is_dir() else []
    return b"\n".join(p.read_bytes() for p in files)


def _mark_bytes(res: PathResult, raw: bytes) -> None:
    """Store files: each needle's UTF-8 bytes, as written and normalised (a store that kept NFKC text)."""
    for i, it in enumerate(res.items):
        if any(readable_bytes(n, raw) for n in it.needles):
            res.readable["store_files"].add(i)


# -- what is written ------------------------------------------------------------------------------------
GROUP = 6  # items per session / edit batch: fewer commits, the same secrets


def groups(items: list[Item]) -> list[tuple[int, list[Item]]]:
    return [(g, items[g:g + GROUP]) for g in range(0, len(items), GROUP)]


def session_body(k: int, items: list[Item]) -> dict[str, Any]:
    """One session saying ``items`` in turn; a split secret comes in two turns of the user, with a reply
    in between for every other one (the second half comes in the speaker's next turn)."""
    turns: list[dict[str, str]] = []
    for j, it in enumerate(items):
        for n, t in enumerate(it.turns):
            if n and (k + j) % 2:
                turns.append({"role": "assistant", "text": "Go on."})
            turns.append({"role": "user", "text": t})
        turns.append({"role": "assistant", "text": "Noted."})
    return {"session_id": f"s{k}", "started_at": f"2025-03-{1 + k % 28:02d}T10:00:00Z", "turns": turns}


def edit_batch(user: str, k: int, texts: list[str | None]) -> dict[str, Any]:
    """One batch with each of ``texts`` in every free-text field of a group of edits (``None``: ordinary)."""
    sid = f"e{k}"
    turns: list[dict[str, Any]] = []
    edits: list[dict[str, Any]] = []
    for j, text in enumerate(texts):
        n = f"{k}-{j}"
        t = text or f"I like green tea, note {n}"
        fact = {"user_id": user, "statement": t, "evidence": t, "scope": t, "holder": t, "qualifiers": {"note": t}}
        plain = {"user_id": user, "statement": f"I walk to work on day {n}"}
        c, f = f"{user}::c{n}", f"{user}::f{n}"
        turns.append({"turn_id": f"{sid}:{j}", "user_id": user, "session_id": sid, "seq": j, "role": "user", "text": t})
        edits += [{"op": "CREATE", "concept_id": c, "name": t, "description": t},
                  {"op": "ATTACH", "concept_id": c, "fact": fact | {"fact_id": f"{f}a"}},
                  {"op": "ATTACH", "concept_id": c, "fact": fact | {"fact_id": f"{f}b"}},
                  {"op": "ATTACH", "concept_id": c, "fact": plain | {"fact_id": f"{f}c"}},
                  {"op": "ATTACH", "concept_id": c, "fact": plain | {"fact_id": f"{f}d", "statement": f"I cycle on day {n}"}},
                  {"op": "CONFLICT", "a": f"{f}a", "b": f"{f}b", "reason": t},
                  {"op": "RESOLVE", "a": f"{f}a", "b": f"{f}b", "reason": t},
                  {"op": "SUPERSEDE", "new_fact_id": f"{f}c", "old_fact_id": f"{f}b", "reason": t},
                  {"op": "RETRACT", "fact_id": f"{f}a", "reason": t}]
    return {"user_id": user, "session_id": sid, "turns": turns, "edits": edits}


def export_file(path: Path, user: str, items: list[Item]) -> None:
    """An ``evomem export`` file of ``user`` whose every free-text field holds a secret of ``items``."""
    from graph.edits import EditBatch, apply_batch
    from graph.portable import UserExport, dumps
    from graph.snapshot import Snapshot

    batch = EditBatch.model_validate(edit_batch(user, 0, [it.text for it in items]))
    snap, _ = apply_batch(Snapshot(user_id=user), batch)
    turns = batch.turns
    path.write_text(dumps(UserExport(snap, turns, {})), encoding="utf-8")


# -- the run --------------------------------------------------------------------------------------------
def _app(mem: Any, cfg: Any) -> Any:
    from fastapi.testclient import TestClient

    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from policy.rule import RulePolicy
    from serving.api import ApiDeps, ApiSettings, create_app
    from serving.pipeline import AnswerPipeline
    from serving.server import ingest_with

    ingestor = make_ingestor(mem, IngestConfig(redact=cfg))
    deps = ApiDeps(memory=mem, pipeline=AnswerPipeline(mem, RulePolicy(), None),  # type: ignore[arg-type]
                   settings=ApiSettings(require_auth=False), ingest=ingest_with(ingestor), ingestor=ingestor,
                   redact=cfg)
    return deps, TestClient(create_app(deps), raise_server_exceptions=False)


def _reads(c: Any, user: str) -> list[str]:
    """What a caller can read back about ``user``."""
    out = []
    facts: list[dict[str, Any]] = []
    offset = 0
    while True:
        r = c.get(f"/v1/users/{user}/facts", params={"include": "all", "limit": 500, "offset": offset})
        out.append(r.text)
        page = r.json().get("facts", []) if r.status_code == 200 else []
        facts += page
        if len(page) < 500:
            break
        offset += 500
    out += [c.post(f"/v1/users/{user}/search", json={"query": "password key token card secret"}).text,
            c.get(f"/v1/users/{user}/profile").text,
            c.post(f"/v1/users/{user}/cypher", json={"query": "MATCH (t:Turn) RETURN t.text AS text LIMIT 1000"}).text,
            c.post(f"/v1/users/{user}/cypher", json={"query": "MATCH (e:Edit) RETURN e LIMIT 1000"}).text]
    for f in facts[:10]:
        out.append(c.get(f"/v1/users/{user}/facts/{f['fact']['fact_id']}/history").text)
    return out


def _texts(responses: list[Any]) -> str:
    """Response bodies as a reader sees them (JSON decoded, so escaped non-ASCII is compared as text)."""
    out = []
    for r in responses:
        text = r if isinstance(r, str) else r.text
        try:
            out.append(json.dumps(json.loads(text), ensure_ascii=False))
        except ValueError:
            out.append(text)
    return "\n".join(out)


def _store_surfaces(store: Any, users: dict[str, str], results: dict[str, PathResult]) -> None:
    from graph.portable import export_user

    for path, user in users.items():
        if user not in store.users():
            continue
        _mark(results[path], "cypher", json.dumps(store.run_readonly_cypher(user, "MATCH (n) RETURN n"),
                                                  default=str, ensure_ascii=False))
        _mark(results[path], "exports", export_user(store, user))


async def _mcp_writes(deps: Any, user: str, items: list[Item]) -> list[str]:
    """The MCP write tools: ``add_memory`` for the one-text secrets of the first group, ``add_session`` for
    the others (a group's turns as one session)."""
    from mcp import Client

    from serving.mcp_server import build_mcp_server

    out = []
    first, rest = items[:GROUP * 2], items[GROUP * 2:]
    async with Client(build_mcp_server(deps)) as client:
        calls = [("add_memory", {"text": it.text}) for it in first]
        calls += [("add_session", {"turns": session_body(k, g)["turns"]}) for k, g in groups(rest)]
        for name, args in calls:
            r = await client.call_tool(name, args | {"user_id": user})
            assert not r.is_error, r.content
            out.append(json.dumps(r.structured_content, ensure_ascii=False))
    return out


def _tick(name: str, t0: float) -> None:
    if os.environ.get("REDACTION_TIMINGS"):
        print(f"  {name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)


def _no_detector() -> Any:
    return mock.patch("induction.redact.find_secrets", lambda *a, **k: [])


def run(work: Path, redact: bool = True, per_shape: int = 3, live_server: bool = True) -> Result:
    from evomem.cli import main
    from graph.embedded import EmbeddedStore
    from induction.redact import RedactConfig
    from llmclients.embeddings import HashEmbedder
    from memcore.memory import Memory

    t0 = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    cfg = RedactConfig(enabled=redact)
    paths = PATHS if live_server else PATHS[:-1]
    res = {p: PathResult(corpus(SEEDS[p], per_shape)) for p in paths}
    users = {p: f"u-{p}" for p in paths}
    responses: dict[str, list[Any]] = {p: [] for p in paths}
    store_path = work / "store"
    with _captured_logs() as logs:
        mem = Memory(EmbeddedStore(store_path), HashEmbedder(64))
        mem.store.setup()
        try:
            deps, c = _app(mem, cfg)
            with c:
                u = users["session"]
                responses["session"] += [c.post(f"/v1/users/{u}/sessions", json=session_body(k, g))
                                         for k, g in groups(res["session"].items)]
                _tick("session", t0)
                u = users["edits"]
                responses["edits"] += [c.post(f"/v1/users/{u}/edits", json=edit_batch(u, k, [it.text for it in g]))
                                       for k, g in groups(res["edits"].items)]
                _tick("edits", t0)
                u = users["forget"]
                n = len(res["forget"].items)
                r = c.post(f"/v1/users/{u}/edits", json={"user_id": u, "edits": [
                    {"op": "CREATE", "concept_id": f"{u}::c", "name": "habits"},
                    *({"op": "ATTACH", "concept_id": f"{u}::c", "fact": {"fact_id": f"{u}::f{j}", "user_id": u,
                                                                         "statement": f"I cycle on day {j}"}}
                      for j in range(n))]})
                assert r.status_code == 200, r.text
                responses["forget"] += [c.post(f"/v1/users/{u}/facts/{u}::f{j}/forget", json={"reason": it.text})
                                        for j, it in enumerate(res["forget"].items)]
                _tick("forget", t0)
                responses["mcp"] += anyio.run(_mcp_writes, deps, users["mcp"], res["mcp"].items)
                bad = [(p, r.status_code, r.text[:300]) for p in paths for r in responses[p]
                       if not isinstance(r, str) and r.status_code != 200]
                assert not bad, bad[:3]
                _tick("mcp", t0)
                for p in ("session", "edits", "forget", "mcp"):
                    responses[p] += _reads(c, users[p])
                _tick("reads", t0)
            _store_surfaces(mem.store, {p: users[p] for p in ("session", "edits", "forget", "mcp")}, res)
        finally:
            mem.close()
        _tick("store surfaces", t0)
        # import: the CLI, into a store of its own (the embedded store is locked by one process at a time)
        f = work / "import.jsonl"
        export_file(f, users["import"], res["import"].items)
        out = work / "import-out.txt"
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf), \
                (contextlib.nullcontext() if redact else _no_detector()):
            rc = main(["import", str(f), "--store-path", str(work / "import-store"), "--embedder", "hash", "--json"])
        out.write_text(buf.getvalue())
        assert rc == 0, buf.getvalue()[-2000:]
        responses["import"].append(buf.getvalue())
        imp = EmbeddedStore(work / "import-store")
        try:
            _store_surfaces(imp, {"import": users["import"]}, res)
        finally:
            imp.close()
        log_text = "\n".join(logs.lines)
        _tick("import", t0)
    for p in paths:
        if p != "http":
            _mark(res[p], "responses", _texts(responses[p]))
            _mark(res[p], "logs", log_text)
    raw = raw_store_bytes(store_path)
    for p in ("session", "edits", "forget", "mcp"):
        _mark_bytes(res[p], raw)
    _mark_bytes(res["import"], raw_store_bytes(work / "import-store"))
    _tick("scans", t0)
    if live_server:
        _live(work, redact, users["http"], res["http"])
    return Result(redact, res, time.perf_counter() - t0)


def _live(work: Path, redact: bool, user: str, res: PathResult) -> None:
    """Sessions and edit batches through a real ``evomem serve`` (debug log level)."""
    from graph.embedded import EmbeddedStore

    env = None
    if not redact:  # the served process has no switch for redaction: stub the detector at its start
        site = work / "no-redaction-site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text("import induction.redact as r\nr.find_secrets = lambda *a, **k: []\n")
        env = {"PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    store = work / "http-store"
    # an answer URL where nothing listens: no answer model loads (no route used here generates an answer)
    api = start_api_server(work, store, f"http://127.0.0.1:{free_port()}/v1", "none",
                           api_key="redaction-key-0123456789", extra_args=["--log-level", "debug"], env=env)
    responses: list[Any] = []
    try:
        with httpx.Client(base_url=api.url, headers=api.headers, timeout=60, trust_env=False) as c:
            for k, g in groups(res.items):  # every other group as a session, the others as an edit batch
                body = session_body(k, g) if k % (2 * GROUP) == 0 else edit_batch(user, k, [it.text for it in g])
                route = "sessions" if k % (2 * GROUP) == 0 else "edits"
                responses.append(c.post(f"/v1/users/{user}/{route}", json=body))
            bad = [(r.status_code, r.text[:300]) for r in responses if r.status_code != 200]
            assert not bad, bad[:3]
            responses += _reads(c, user)
    finally:
        api.stop()
    _mark(res, "responses", _texts(responses))
    _mark(res, "logs", api.log())
    st = EmbeddedStore(store)
    try:
        _store_surfaces(st, {"http": user}, {"http": res})
    finally:
        st.close()
    _mark_bytes(res, raw_store_bytes(store))


if __name__ == "__main__":  # a quick look: python tests/redaction_paths.py [off]
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as d:
        n = int(os.environ.get("REDACTION_PER_SHAPE", "3"))
        print(json.dumps(run(Path(d), redact=len(sys.argv) < 2, per_shape=n).summary(), indent=1))
