"""Graph-layer subcommands: demo (the main job), retrieve, cypher, undo, load-example, users."""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from evomem.cliargs import positional
from evomem.commands.common import Command, CommonOptions, _print, _state_line


class DemoOptions(CommonOptions):
    k: int = Field(default=4, ge=1, description="Seed facts per request (small, so traversal's additions show).")
    answers: bool = Field(default=True, description="Also answer each request: a Reasoning State from the "
                          "configured policy (default: the learned one in the package; EVOMEM_POLICY_KIND=rule: the "
                          "rule baseline) + the answer model (default: the shipped SmolLM2-135M on CPU, about a "
                          "minute, which shows the plumbing, not answer quality), and check each state against what "
                          "its request needs.")
    answer_url: str | None = Field(default=None, description="OpenAI-compatible answer server for the answers, e.g. "
                                   "vLLM http://127.0.0.1:8000/v1 (default: EVOMEM_ANSWER_URL, else SmolLM2-135M "
                                   "in process).")
    answer_model: str | None = Field(default=None, description="Served answer model name (EVOMEM_ANSWER_MODEL).")
    answer_api_key: str | None = Field(default=None, description="Answer server key (EVOMEM_ANSWER_API_KEY).")


class RetrieveOptions(CommonOptions):
    user: str = Field(description="User id.")
    query: str = Field(**positional("The request to retrieve memories for."))
    k: int = Field(default=10, ge=1, description="Seed facts.")
    traverse: bool = Field(default=True, description="Follow SUPERSEDES/CONFLICTS_WITH to closure.")
    budget: int | None = Field(default=None, ge=1, description="Token budget for the rendered context.")
    as_of: datetime | None = Field(default=None, description="Valid time (ISO date): what was true then.")
    known_at: datetime | None = Field(default=None, description="Recorded time (ISO date): what memory knew then.")


class CypherOptions(CommonOptions):
    user: str = Field(description="User id; the query only sees this user's nodes.")
    query: str = Field(**positional("Read-only Cypher (MATCH ... RETURN ...)."))
    params: dict[str, Any] | None = Field(default=None, description="Query parameters as a JSON object.")


class UndoOptions(CommonOptions):
    user: str = Field(description="User id.")
    edit_id: str = Field(**positional("The edit to revert (must be the user's latest not-undone edit)."))


class LoadExampleOptions(CommonOptions):
    pass


class UsersOptions(CommonOptions):
    pass


def cmd_demo(opts: DemoOptions) -> int:
    from evomem.examples import asked_at, expectation_met, ingest_history, load_history, showcase
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from memcore.memory import Memory

    settings = opts.settings()
    if opts.store_path is None and settings.store.backend == "embedded":
        settings.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-demo-")) / "store")
    mem = Memory.from_settings(settings)
    history = load_history()
    when = asked_at(history)
    t0 = time.perf_counter()
    # the default ingestion, as `evomem ingest` runs it: offline extractor, the shipped relation model
    ing = make_ingestor(mem, IngestConfig(extractor="offline", adjudicator="model"))
    reports = ingest_history(mem, history, ing)
    secs = time.perf_counter() - t0
    users = [u["user_id"] for u in history["users"]]
    found = showcase(mem, users, when)
    checks = [(e, expectation_met(e, found)) for e in history.get("showcase", [])]
    out: dict[str, Any] = {"store": settings.store.backend, "asked_at": when.isoformat(),
                           "ingested": [r.model_dump(mode="json", include={"session_id", "user_id", "status", "facts_added",
                                                                            "supersessions", "conflicts"}) for r in reports],
                           "found": [f.model_dump() for f in found],
                           "showcase": [{"expected": e, "found": f is not None} for e, f in checks], "requests": []}
    lines = [f"EvoMemState demo — {settings.store.backend} store"
             + (f" at {settings.store.path}" if settings.store.backend == "embedded" else ""),
             f"ingested {len(reports)} sessions of the example history (raw turns with their dates) with the default "
             f"ingestion ({ing.extractor.name} extractor, {ing.adjudicator.name} adjudicator) in {secs:.1f}s: "
             f"{sum(r.facts_added for r in reports)} facts, {sum(r.supersessions for r in reports)} updates, "
             f"{sum(r.conflicts for r in reports)} conflicts",
             f"requests are asked at {when.date().isoformat()}: every state below is read as of then", "",
             "what ingestion found:"]
    label = {"update": "update", "self_contradiction": "own contradiction", "evidence_conflict": "evidence vs belief",
             "expired": "expired", "scoped": "scoped"}
    for f in found:
        head = f"  {label[f.state]:<19}[{f.user}] {f.fact!r}"
        tail = {"update": f" replaces {f.other!r}", "self_contradiction": f" conflicts with {f.other!r} ({f.detail})",
                "evidence_conflict": f" disputes {f.other!r} ({f.detail})", "expired": f" — {f.detail}",
                "scoped": f" — only {f.detail}"}[f.state]
        lines.append(head + tail)
    ok = sum(1 for _, f in checks if f is not None)
    lines += ["", f"showcase check — what the example exists to show, looked for in what ingestion found: "
              f"{ok} of {len(checks)} found"]
    lines += [f"  {'found  ' if f is not None else 'MISSING'} {e['state']} [{e['user']}] "
              + ", ".join(f"{k}~{v!r}" for k, v in e.items() if k not in ("state", "user")) for e, f in checks]
    lines.append("")
    for req in history["requests"]:
        b = mem.retrieve(req["user_id"], req["request"], k=opts.k, as_of=when)
        out["requests"].append({"user": req["user_id"], "request": req["request"], "bundle": b.model_dump(mode="json")})
        lines.append(f"[{req['user_id']}] {req['request']}")
        lines.extend(_retrieval_lines(b))
        lines.extend(_state_line(it) for it in b.items)
        lines.append("")
    if opts.answers:
        from serving.demo import run_demo_answers, state_misses
        from serving.pipeline import PipelineConfig, make_policy

        answer_model = None
        if opts.answer_url:
            from llmclients.config import ModelsConfig
            from llmclients.factory import make_chat_model

            answer_model = make_chat_model(ModelsConfig.from_env(os.environ, answer={
                "base_url": opts.answer_url, "model": opts.answer_model, "api_key": opts.answer_api_key}).answer)
        if not opts.as_json:
            print("\n".join(lines + [f"answers (Reasoning State from the {settings.models.policy.display_name()} policy "
                                      f"-> {'the answer model at ' + opts.answer_url if opts.answer_url else 'SmolLM2-135M on CPU'}):",
                                      ""]), flush=True)
            lines = []
        sink: list[str] = []
        results = run_demo_answers(mem, history["requests"], answer_model=answer_model,
                                   config=PipelineConfig(k=opts.k, max_answer_tokens=64, as_of=when),
                                   policy=make_policy(settings.models.policy),
                                   out=sink.append if opts.as_json else print)
        out["answers"] = [r.model_dump(mode="json") | {"state_misses": state_misses(q, r)}
                          for q, r in zip(history["requests"], results)]
    mem.close()
    if lines or opts.as_json:
        _print(opts, out, lambda: "\n".join(lines))
    return 0


def _retrieval_lines(b: Any) -> list[str]:
    """The K seeds, then what the neighbour route and traversal added beside them (not counted in K)."""
    seeds = [s for s in b.explain.seeds if not s.window]
    window = [s for s in b.explain.seeds if s.window]

    def seed(s: Any) -> str:
        return (f"{s.fact_id.split('::')[-1]} ({s.score:.4f}; " + " ".join(f"{r}#{n}" for r, n in s.routes.items()) + ")")

    return [f"  seeds ({len(seeds)}): " + ", ".join(seed(s) for s in seeds),
            "  neighbour route added: " + (", ".join(s.fact_id.split("::")[-1] for s in window) or "nothing"),
            "  traversal added: " + (", ".join(i.split("::")[-1] for i in b.explain.added_by_traversal) or "nothing")]


def cmd_retrieve(opts: RetrieveOptions) -> int:
    from memcore.memory import Memory
    from retrieval.render import render_context

    mem = Memory.from_settings(opts.settings())
    b = mem.retrieve(opts.user, opts.query, k=opts.k, traverse=opts.traverse, as_of=opts.as_of, known_at=opts.known_at)
    ctx = render_context(b, opts.budget)
    mem.close()
    _print(opts, {"bundle": b.model_dump(mode="json"), "context": ctx.model_dump()},
           lambda: "\n".join(_retrieval_lines(b) + [_state_line(it) for it in b.items]
                              + ["", ctx.text, f"({ctx.tokens} tokens)"]))
    return 0


def cmd_cypher(opts: CypherOptions) -> int:
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    rows = mem.cypher(opts.user, opts.query, opts.params)
    mem.close()
    _print(opts, {"rows": rows}, lambda: "\n".join(json.dumps(r, default=str) for r in rows) or "(no rows)")
    return 0


def cmd_undo(opts: UndoOptions) -> int:
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    cs = mem.undo(opts.user, opts.edit_id)
    mem.close()
    _print(opts, {"undone": opts.edit_id, "version": cs.new_version}, lambda: f"undid {opts.edit_id}")
    return 0


def cmd_load_example(opts: LoadExampleOptions) -> int:
    from evomem.examples import load_fixture
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    n = load_fixture(mem)
    users = mem.store.users()
    mem.close()
    _print(opts, {"sessions_loaded": n, "users": users},
           lambda: f"loaded {n} sessions of the HAND-WRITTEN example ontology (a fixture with known fact ids such as "
           f"maya::f::hiking, not what ingestion finds: `evomem demo` ingests the same turns); users: {', '.join(users)}")
    return 0


def cmd_users(opts: UsersOptions) -> int:
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    users = mem.store.users()
    mem.close()
    _print(opts, {"users": users}, lambda: "\n".join(users) or "(no users)")
    return 0


COMMANDS: dict[str, Command] = {
    "demo": (DemoOptions, cmd_demo, "Main job: ingest the shipped history's turns, show what ingestion found and "
             "retrieval with relational states."),
    "retrieve": (RetrieveOptions, cmd_retrieve, "Seeds + traversal for one request, with states and rendered context."),
    "cypher": (CypherOptions, cmd_cypher, "Run read-only Cypher scoped to one user."),
    "undo": (UndoOptions, cmd_undo, "Revert a user's latest ontology edit."),
    "load-example": (LoadExampleOptions, cmd_load_example, "Load the hand-written example ontology (a fixture with "
                     "known fact ids) into the store."),
    "users": (UsersOptions, cmd_users, "List users with stored memories."),
}


