"""Induction subcommands: ingest, forget, purge, history. (``evomem eval memsyco`` lives in eval_cmds.py and
scores with evaluation/memsyco_selection.py.)

    evomem ingest --user maya sessions.jsonl
    evomem ingest --format locomo ../shared/data/locomo/locomo10.json --conversation conv-26
    evomem forget --user maya --request "forget that I'm vegetarian"
    evomem purge --user maya --turns s1:0 s1:2 --yes
    evomem history --user maya FACT_ID
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from evomem.cliargs import positional
from evomem.commands.common import Command, CommonOptions, _print

if TYPE_CHECKING:  # imported where used: the CLI starts without loading every subsystem
    from induction.config import IngestConfig
    from llmclients.chat import ChatModel


class LLMOptions(CommonOptions):
    extractor: Literal["offline", "llm"] = Field(default="offline", description="offline: deterministic rules (default); "
                                                 "llm: a chat model with a JSON schema.")
    adjudicator: Literal["model", "rules", "llm"] | None = Field(
        default=None, description="Default: llm with --extractor llm, else model (the trained relation model; the "
        "rules when its artefact is absent).")
    llm_url: str | None = Field(default=None, description="OpenAI-compatible endpoint incl. /v1 (vLLM, evomem "
                                "serve-model); without it the llm choices run SmolLM2 in-process.")
    llm_model: str = Field(default="default", description="Served model name.")
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout of the model server.")

    def ingest_config(self) -> IngestConfig:
        from induction.config import IngestConfig

        return IngestConfig(extractor=self.extractor,
                            adjudicator=self.adjudicator or ("llm" if self.extractor == "llm" else "model"))

    def chat_model(self) -> ChatModel | None:
        cfg = self.ingest_config()
        if cfg.extractor != "llm" and cfg.adjudicator != "llm":
            return None
        from llmclients.factory import chat_model_at

        # without --llm-url: EVOMEM_EXTRACTION_*, default SmolLM2 in process
        return chat_model_at(self.llm_url, self.llm_model, self.llm_timeout_s,
                             default=None if self.llm_url else self.settings().models.extraction)


class IngestOptions(LLMOptions):
    files: list[str] = Field(**positional("Session files (JSON, JSONL, or a benchmark file/folder with --format)."))
    user: str | None = Field(default=None, description="User id (overrides the file's; required if the file has none).")
    format: Literal["json", "jsonl", "locomo", "memsyco", "beam"] | None = Field(
        default=None, description="Input format (default: by extension, .jsonl = jsonl, else json).")
    conversation: str | None = Field(default=None, description="Only this LoCoMo sample / BEAM folder / MemSyco row id.")
    progress: bool = Field(default=True, description="Show a progress bar on stderr.")
    max_rejected: int = Field(default=20, ge=0, description="Rejected items listed in the text summary.")


class ForgetOptions(CommonOptions):
    user: str = Field(description="User id.")
    fact: str | None = Field(default=None, description="Fact id to retract.")
    request: str | None = Field(default=None, description="Natural-language request, e.g. \"forget that I'm vegetarian\".")
    reason: str = Field(default="", description="Stored with the RETRACT edit.")
    threshold: float | None = Field(default=None, ge=0, le=1, description="Min cosine for --request (default 0.55).")
    all_matches: bool = Field(default=False, description="Retract every fact above the threshold, not just the best.")

    @model_validator(mode="after")
    def _one(self) -> ForgetOptions:
        if (self.fact is None) == (self.request is None):
            raise ValueError("give exactly one of --fact or --request")
        return self


class PurgeOptions(CommonOptions):
    user: str = Field(description="User id.")
    turns: list[str] | None = Field(default=None, description="Only these turn ids and everything derived from them.")
    yes: bool = Field(default=False, description="Confirm the hard delete (it cannot be undone).")


class HistoryOptions(CommonOptions):
    user: str = Field(description="User id.")
    fact_id: str = Field(**positional("The fact to explain."))


def _sorted_sessions(sessions: list[Any]) -> list[Any]:
    """Time order per user (facts are incorporated in temporal order); undated sessions keep file order."""
    idx = {id(s): i for i, s in enumerate(sessions)}
    return sorted(sessions, key=lambda s: (s.user_id, s.started_at is None, s.started_at.isoformat() if s.started_at else "",
                                           idx[id(s)]))


def cmd_ingest(opts: IngestOptions) -> int:
    from tqdm import tqdm

    from memcore.memory import Memory
    from induction.adapters import load_any
    from induction.pipeline import IngestError, make_ingestor

    sessions = []
    for f in opts.files:  # every file loads (and validates) before anything is written
        fmt = opts.format or ("jsonl" if f.lower().endswith(".jsonl") else "json")
        sessions += load_any(f, fmt, opts.user, opts.conversation)
    sessions = _sorted_sessions(sessions)
    mem = Memory.from_settings(opts.settings())
    ing = make_ingestor(mem, opts.ingest_config(), opts.chat_model())
    totals = {k: 0 for k in ("committed", "unchanged", "failed", "turns", "facts_added", "duplicates", "supersessions",
                             "conflicts", "concepts_created", "concepts_merged", "concepts_split", "llm_calls")}
    rejected: list[dict[str, str]] = []
    redacted: dict[str, int] = {}  # secrets removed before storage, per kind (induction/redact.py)
    failures: list[str] = []
    reports = []
    t0 = time.perf_counter()
    bar = tqdm(sessions, desc="ingest", unit="session", disable=not opts.progress or opts.as_json, file=sys.stderr)
    for s in bar:
        try:
            r = ing.ingest(s)
        except IngestError as e:
            totals["failed"] += 1
            failures.append(str(e))
            continue
        reports.append(r)
        totals[r.status] += 1
        for k in ("turns", "facts_added", "duplicates", "supersessions", "conflicts", "concepts_created",
                  "concepts_merged", "concepts_split", "llm_calls"):
            totals[k] += getattr(r, k)
        rejected += [{"session": s.session_id, **x.model_dump()} for x in r.rejected]
        for kind, n in r.redacted.items():
            redacted[kind] = redacted.get(kind, 0) + n
        bar.set_postfix(facts=totals["facts_added"])
    secs = time.perf_counter() - t0
    mem.close()
    done = totals["committed"]
    out = {**totals, "sessions": len(sessions), "seconds": round(secs, 3),
           "sessions_per_s": round(done / secs, 3) if secs and done else 0.0,
           "facts_per_s": round(totals["facts_added"] / secs, 2) if secs else 0.0,
           "llm_calls_per_session": round(totals["llm_calls"] / done, 3) if done else 0.0,
           "rejected": rejected, "redacted": dict(sorted(redacted.items())), "failures": failures,
           "extractor": ing.extractor.name,
           "adjudicator": ing.adjudicator.name}

    def text() -> str:
        lines = [f"ingested {len(sessions)} sessions in {secs:.1f}s ({out['sessions_per_s']} sessions/s, "
                 f"{out['facts_per_s']} facts/s) with the {ing.extractor.name} extractor",
                 f"  committed {done}, unchanged {totals['unchanged']}, failed {totals['failed']}",
                 f"  facts added {totals['facts_added']}, duplicates {totals['duplicates']}, supersessions "
                 f"{totals['supersessions']}, conflicts {totals['conflicts']}",
                 f"  concept edits: {totals['concepts_created']} created, {totals['concepts_merged']} merged, "
                 f"{totals['concepts_split']} split; LLM calls {totals['llm_calls']}",
                 f"  rejected items: {len(rejected)}"]
        if redacted:
            lines.insert(2, f"  secrets redacted before storage: {sum(redacted.values())} ("
                         + ", ".join(f"{k} {n}" for k, n in sorted(redacted.items())) + ")")
        lines += [f"    [{x['step']}] {x['session']}: {x['item'][:60]} — {x['reason'][:120]}" for x in rejected[: opts.max_rejected]]
        lines += [f"  FAILED {m}" for m in failures]
        return "\n".join(lines)

    _print(opts, out, text)
    return 1 if failures else 0


def cmd_forget(opts: ForgetOptions) -> int:
    from memcore.memory import Memory
    from induction.config import ForgetConfig
    from induction.forget import retract

    settings = opts.settings()
    mem = Memory.from_settings(settings)
    cfg = ForgetConfig(**({"match_threshold": opts.threshold} if opts.threshold is not None else {}))
    try:
        rep = retract(mem, opts.user, fact_id=opts.fact, request=opts.request, reason=opts.reason, cfg=cfg,
                      all_matches=opts.all_matches, redact=settings.ingest.redact)
    finally:
        mem.close()
    _print(opts, rep.model_dump(mode="json"), lambda: "\n".join(
        f"retracted {r.fact_id}" + (f" (cosine {r.similarity:.2f})" if r.similarity is not None else "") + f": {r.statement}"
        for r in rep.retracted))
    return 0


def cmd_purge(opts: PurgeOptions) -> int:
    from memcore.memory import Memory
    from induction.forget import purge, purge_turns

    if not opts.yes:
        what = f"turns {', '.join(opts.turns)} and everything derived from them" if opts.turns else "ALL memories"
        print(f"evomem purge: this hard-deletes {what} of user {opts.user!r} and cannot be undone; pass --yes",
              file=sys.stderr)
        return 2
    mem = Memory.from_settings(opts.settings())
    try:
        rep = purge_turns(mem, opts.user, opts.turns) if opts.turns else purge(mem, opts.user)
    finally:
        mem.close()
    _print(opts, rep.model_dump(), lambda: f"purged for {opts.user}: " + ", ".join(f"{k} {v}" for k, v in rep.deleted.items())
           + (f" (unknown turns: {', '.join(rep.unknown_turn_ids)})" if rep.unknown_turn_ids else ""))
    return 0


def cmd_history(opts: HistoryOptions) -> int:
    from memcore.memory import Memory
    from induction.history import UnknownFact, fact_history

    mem = Memory.from_settings(opts.settings())
    try:
        h = fact_history(mem.store, opts.user, opts.fact_id)
    except UnknownFact as e:
        print(f"evomem history: {e.args[0]}", file=sys.stderr)
        return 2
    finally:
        mem.close()

    def text() -> str:
        f, s = h.fact, h.state
        lines = [f"{f.fact_id}: {f.statement}",
                 f"  kind {f.kind}, holder {f.holder}, validity {s.validity}, concept {' > '.join(s.concept_path[1:])}",
                 f"  evidence: {f.evidence!r}"]
        lines += [f"  {r.type} {'→' if r.direction == 'out' else '←'} {r.other_fact_id}: {h.related.get(r.other_fact_id, '')}"
                  for r in s.relations]
        lines.append("  turns:")
        lines += [f"    [{t.turn_id}] {t.role}: {t.text}" for t in h.turns]
        lines.append("  edits:")
        lines += [f"    #{e.seq} {e.op} {e.at.isoformat()} session={e.session_id} {e.payload}"
                  + (" (undone)" if e.undone_at else "") for e in h.edits]
        return "\n".join(lines)

    _print(opts, h.model_dump(mode="json"), text)
    return 0


COMMANDS: dict[str, Command] = {
    "ingest": (IngestOptions, cmd_ingest, "Turn dialogue sessions into facts and ontology edits (atomic per session)."),
    "forget": (ForgetOptions, cmd_forget, "Retract a fact (by id or by a natural-language request); it stays as a tombstone."),
    "purge": (PurgeOptions, cmd_purge, "Hard-delete a user's memories, or given turns and everything derived from them."),
    "history": (HistoryOptions, cmd_history, "A fact, its evidence turns and every edit that touched it."),
}
