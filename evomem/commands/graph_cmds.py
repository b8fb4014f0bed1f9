"""Graph-layer subcommands: demo (the main job), retrieve, cypher, undo, load-example, users."""

from __future__ import annotations

import json
import tempfile
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
                          "rule baseline) + the shipped SmolLM2-135M answer model on CPU (about a minute), and check "
                          "each state against what its request needs.")


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
    from evomem.examples import history_batches, load_history
    from memcore.memory import Memory

    settings = opts.settings()
    tmp = None
    if opts.store_path is None and settings.store.backend == "embedded":
        tmp = tempfile.mkdtemp(prefix="evomem-demo-")
        settings.store.path = str(Path(tmp) / "store")
    mem = Memory.from_settings(settings)
    history = load_history()
    out: dict[str, Any] = {"store": settings.store.backend, "loaded": [], "requests": []}
    for batch in history_batches(history):
        if batch.session_id in mem.store.load_snapshot(batch.user_id).sessions:
            continue
        _, cs = mem.apply(batch.model_copy(update={"session_hash": batch.session_id}))
        out["loaded"].append({"user": batch.user_id, "session": batch.session_id, "facts": len(cs.facts_create),
                              "relations": len(cs.relations_add), "concepts": len(cs.concepts_upsert)})
    lines = [f"EvoMemState demo — {settings.store.backend} store"
             + (f" at {settings.store.path}" if settings.store.backend == "embedded" else ""),
             f"loaded {len(out['loaded'])} sessions of the shipped history "
             f"({sum(x['facts'] for x in out['loaded'])} facts, {sum(x['relations'] for x in out['loaded'])} relations)", ""]
    for req in history["requests"]:
        b = mem.retrieve(req["user_id"], req["request"], k=opts.k)
        out["requests"].append({"user": req["user_id"], "request": req["request"], "bundle": b.model_dump(mode="json")})
        lines.append(f"[{req['user_id']}] {req['request']}")
        lines.append("  seeds: " + ", ".join(
            f"{s.fact_id.split('::')[-1]} ({s.score:.4f}; " + " ".join(f"{r}#{n}" for r, n in s.routes.items()) + ")"
            for s in b.explain.seeds))
        lines.append("  traversal added: " + (", ".join(i.split("::")[-1] for i in b.explain.added_by_traversal) or "nothing"))
        lines.extend(_state_line(it) for it in b.items)
        lines.append("")
    if opts.answers:
        from serving.demo import run_demo_answers, state_misses
        from serving.pipeline import PipelineConfig, make_policy

        if not opts.as_json:
            print("\n".join(lines + [f"answers (Reasoning State from the {settings.models.policy.display_name()} policy "
                                      "-> SmolLM2-135M on CPU):", ""]), flush=True)
            lines = []
        sink: list[str] = []
        results = run_demo_answers(mem, history["requests"], config=PipelineConfig(k=opts.k, max_answer_tokens=64),
                                   policy=make_policy(settings.models.policy),
                                   out=sink.append if opts.as_json else print)
        out["answers"] = [r.model_dump(mode="json") | {"state_misses": state_misses(q, r)}
                          for q, r in zip(history["requests"], results)]
    mem.close()
    if lines or opts.as_json:
        _print(opts, out, lambda: "\n".join(lines))
    return 0


def cmd_retrieve(opts: RetrieveOptions) -> int:
    from memcore.memory import Memory
    from graph.render import render_context

    mem = Memory.from_settings(opts.settings())
    b = mem.retrieve(opts.user, opts.query, k=opts.k, traverse=opts.traverse, as_of=opts.as_of, known_at=opts.known_at)
    ctx = render_context(b, opts.budget)
    mem.close()
    _print(opts, {"bundle": b.model_dump(mode="json"), "context": ctx.model_dump()},
           lambda: "\n".join([_state_line(it) for it in b.items] + ["", ctx.text, f"({ctx.tokens} tokens)"]))
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
    from evomem.examples import load_into
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    n = load_into(mem)
    users = mem.store.users()
    mem.close()
    _print(opts, {"sessions_loaded": n, "users": users}, lambda: f"loaded {n} sessions; users: {', '.join(users)}")
    return 0


def cmd_users(opts: UsersOptions) -> int:
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    users = mem.store.users()
    mem.close()
    _print(opts, {"users": users}, lambda: "\n".join(users) or "(no users)")
    return 0


COMMANDS: dict[str, Command] = {
    "demo": (DemoOptions, cmd_demo, "Main job: load the shipped history and show retrieval with relational states."),
    "retrieve": (RetrieveOptions, cmd_retrieve, "Seeds + traversal for one request, with states and rendered context."),
    "cypher": (CypherOptions, cmd_cypher, "Run read-only Cypher scoped to one user."),
    "undo": (UndoOptions, cmd_undo, "Revert a user's latest ontology edit."),
    "load-example": (LoadExampleOptions, cmd_load_example, "Load the shipped example history into the store."),
    "users": (UsersOptions, cmd_users, "List users with stored memories."),
}


