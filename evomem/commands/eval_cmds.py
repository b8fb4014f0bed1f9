"""Eval subcommand: ``evomem eval locomo|memsyco|beam --data DIR``.

    evomem eval locomo --data ../shared/data/locomo --out runs/locomo
    evomem eval beam --data ../shared/data/beam/100K --json
    evomem eval memsyco --data ../shared/data/memsyco-bench --limit-questions 50
    evomem eval phrasing --half test          # the hand-written phrasing set (evaluation/phrasing_eval.py)
    evomem eval locomo --data DIR --answers openai --answer-url http://127.0.0.1:8000/v1 --answer-model qwen3-8b

Retrieval-side settings used for the LoCoMo bars (documented, not fitted per question): ``--k 50
--baseline-k 10 --budget 600``. The 600-token budget is what bounds the context; K only has to be
large enough to fill it (K=10 uses about 220 of the 600 tokens), and ``--baseline-k 10`` keeps the K
baselines at the published K=10 while ``naive_rag_budget`` gets the same 600 tokens as our system.
Seed-fusion settings (candidates, RRF k) stay at their defaults: deeper candidate lists scored worse.

Each conversation is ingested session by session in time order into a fresh store (a temporary
embedded store, or Neo4j users under a run-unique prefix that are purged afterwards unless
``--keep-store``); every question is asked after the sessions before it, and our system, its
ablations and the turn baselines are scored on it in the same pass.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from evomem.cliargs import positional
from evomem.commands.common import Command
from evomem.commands.induction_cmds import LLMOptions

Benchmark = Literal["locomo", "memsyco", "beam", "phrasing"]


class EvalOptions(LLMOptions):
    benchmark: Benchmark = Field(**positional("Which benchmark: locomo, memsyco, beam or phrasing."))
    data: str = Field(default="", description="The benchmark's data folder (or, for LoCoMo, its JSON file), in its own "
                      "format; phrasing: the cases file (default evaluation/phrasing/cases.jsonl).")
    half: Literal["tune", "test", "all"] = Field(default="test", description="phrasing: which half of the set "
                                                 "(fixed by a hash of the case id; never tune on test).")
    policy: Literal["rule", "learned", "none"] = Field(default="rule", description="Reasoning State: rule baseline, a "
                                                       "learned policy behind --policy-url, or none.")
    policy_url: str | None = Field(default=None, description="--policy learned: OpenAI-compatible endpoint incl. /v1.")
    policy_model: str = Field(default="policy", description="--policy learned: served model (LoRA) name.")
    k: int = Field(default=10, ge=1, le=1000, description="Seed facts per question, and turns for the K baselines.")
    budget: int | None = Field(default=600, ge=1, description="Whitespace-token budget of our rendered context "
                               "(also the budget of the naive_rag_budget baseline).")
    baseline_k: int | None = Field(default=None, ge=1, description="Turns per question for the K baselines (default --k).")
    baselines: list[str] | None = Field(default=None, description="Subset of naive_rag bm25 rrf naive_rag_budget "
                                        "full_context (default: all).")
    ablations: bool = Field(default=True, description="Also score the ablations (no traversal, no relational states, "
                            "no Reasoning State).")
    retrieval: dict[str, Any] | None = Field(default=None, description="Seed-search overrides as JSON, e.g. "
                                             "'{\"dense_candidates\": 100, \"max_facts\": 60}' (retrieval.retrieve.RetrievalConfig).")
    min_score_ratio: float | None = Field(default=None, gt=0, lt=1, description="Adaptive depth: stop rendering our "
                                          "context where the fused seed score falls below this share of the top one.")
    depth_ratios: list[float] | None = Field(default=None, description="Also score our context at these adaptive-depth "
                                             "ratios (depth_<r> rows; rendering only, for calibration).")
    out: str | None = Field(default=None, description="Folder for report.json, report.md, questions.jsonl and PNG charts.")
    limit_conversations: int | None = Field(default=None, ge=1, description="Only the first N conversations (MemSyco: rows).")
    limit_sessions: int | None = Field(default=None, ge=1, description="Only the first N sessions of each conversation.")
    limit_questions: int | None = Field(default=None, ge=1, description="Only the first N questions per conversation "
                                        "(MemSyco: rows per task file).")
    skip_rows: int = Field(default=0, ge=0, description="MemSyco: leave out the first N rows of each task file (e.g. "
                           "the rows the relation model was trained on).")
    tasks: list[str] | None = Field(default=None, description="MemSyco: only these task files (e.g. "
                                    "valid_memory_selection memory_evidence_conflict); default all.")
    threshold: float = Field(default=0.45, ge=0, le=1, description="MemSyco: min cosine for a fact to stand for a gold item.")
    matching: Literal["ordered", "nearest_item", "greedy"] = Field(
        default="ordered", description="MemSyco valid selection: how a gold item finds its fact "
        "(evaluation/memsyco_selection.py; nearest_item gives the figures of revisions 9-13).")
    answers: Literal["off", "local", "openai"] = Field(default="off", description="Answer metrics: off (default), local "
                                                       "(SmolLM2 in-process), openai (--answer-url).")
    answer_url: str | None = Field(default=None, description="--answers openai: endpoint incl. /v1.")
    answer_model: str = Field(default="default", description="--answers openai: served model name.")
    judge: bool = Field(default=True, description="With answers: grade them with the LLM judge (scoring/prompts/judge_v1.yaml).")
    judge_url: str | None = Field(default=None, description="Judge endpoint incl. /v1 (default: the answer model).")
    judge_model: str = Field(default="default", description="Judge served model name.")
    bootstrap: int = Field(default=1000, ge=0, description="Bootstrap resamples for the confidence intervals (0 = none).")
    keep_store: bool = Field(default=False, description="Keep the evaluation store / Neo4j users afterwards.")
    progress: bool = Field(default=True, description="Progress bar on stderr.")

    @model_validator(mode="after")
    def _check(self) -> EvalOptions:
        if not self.data and self.benchmark != "phrasing":
            raise ValueError(f"eval {self.benchmark} needs --data")
        if self.answers == "openai" and not self.answer_url:
            raise ValueError("--answers openai needs --answer-url")
        if self.policy == "learned" and not self.policy_url:
            raise ValueError("--policy learned needs --policy-url (the served policy adapter)")
        if self.baselines:
            from evaluation.baselines import BASELINES

            bad = [b for b in self.baselines if b not in BASELINES]
            if bad:
                raise ValueError(f"unknown baseline(s) {bad}; known: {', '.join(BASELINES)}")
        return self


def open_cached(benchmark: Literal["locomo", "beam"], data: str | None = None, store: str | None = None,
                k: int = 50, budget: int = 600) -> tuple[Any, EvalOptions, list[Any]]:
    """The persistent store the tuning scripts share: ``scripts/eval-cached.py`` fills it, ``tune-retrieval.py``
    and ``evidence-ceiling.py`` read it. Returns (Memory with the eval's settings, the options, the episodes);
    data defaults to ../shared/data/<benchmark>, the store to /tmp/evomem-eval-cached-<benchmark>."""
    from evaluation import beam, locomo
    from memcore.memory import Memory

    data = data or f"../shared/data/{benchmark}"
    store = store or f"/tmp/evomem-eval-cached-{benchmark}"
    opts = EvalOptions(benchmark=benchmark, data=data, k=k, budget=budget, store_path=store)
    settings = opts.settings()
    settings.store.path = str(Path(store) / "store")
    eps = locomo.locomo_episodes(data) if benchmark == "locomo" else beam.beam_episodes(data, user_prefix="beam-")
    mem = Memory.from_settings(settings)
    # the eval retrieves with its own K (_run_dialogue); so must the scripts that reread its store, or a
    # plain mem.retrieve() reads the settings' default K = 10 seeds instead of the eval's 50
    mem.retrieval = mem.retrieval.model_copy(update={"k": k})
    return mem, opts, eps


def _policy(opts: EvalOptions) -> Any:
    if opts.policy == "none":
        return None
    if opts.policy == "rule":
        from policy.rule import RulePolicy

        return RulePolicy()
    from llmclients.factory import chat_model_at
    from policy.learned import EndpointLearnedPolicy

    return EndpointLearnedPolicy(chat_model_at(opts.policy_url, opts.policy_model, opts.llm_timeout_s), temperature=0.0)


def _answer_setup(opts: EvalOptions, mem: Any, policy: Any, module: Any) -> Any:
    if opts.answers == "off":
        return None
    from scoring.judge import Judge
    from evaluation.harness import AnswerSetup
    from llmclients.factory import chat_model_at
    from policy.rule import RulePolicy
    from serving.pipeline import AnswerPipeline, PipelineConfig

    chat = chat_model_at(opts.answer_url if opts.answers == "openai" else None, opts.answer_model, opts.llm_timeout_s)
    judge_chat = chat_model_at(opts.judge_url, opts.judge_model, opts.llm_timeout_s) if opts.judge_url else chat
    pipe = AnswerPipeline(mem, policy or RulePolicy(), chat, PipelineConfig(k=opts.k, context_budget=opts.budget))
    return AnswerSetup(pipe, chat, Judge(judge_chat) if opts.judge else None, module.score_answer, module.reference)


def cmd_eval(opts: EvalOptions) -> int:
    from memcore.memory import Memory
    from induction.pipeline import make_ingestor

    if opts.benchmark == "phrasing":
        from evomem.commands.phrasing_cmd import run_phrasing_eval

        return run_phrasing_eval(opts)
    settings = opts.settings()
    tmp = None
    if settings.store.backend == "embedded" and opts.store_path is None:
        tmp = tempfile.mkdtemp(prefix="evomem-eval-")  # a fresh store: runs must not see each other's memories
        settings.store.path = str(Path(tmp) / "store")
    # Run-unique user ids keep a shared Neo4j (or a reused store) from mixing this run with earlier ones.
    prefix = f"eval{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}-" if tmp is None else ""
    t0 = time.perf_counter()
    mem = Memory.from_settings(settings)
    load_s = time.perf_counter() - t0
    users: list[str] = []
    try:
        ing = make_ingestor(mem, opts.ingest_config(), opts.chat_model())
        meta = {"store": settings.store.backend, "extractor": ing.extractor.name, "embedder": settings.embedder.kind,
                "policy": opts.policy, "data": opts.data, "model_load_s": round(load_s, 2)}
        if opts.benchmark == "memsyco":
            rep, users = _run_memsyco(opts, ing, prefix), []
            rep["meta"] = meta
            questions: list[Any] = []
        else:
            rep, questions, users = _run_dialogue(opts, ing, mem, prefix, meta)
    finally:
        if not opts.keep_store:
            for u in users if tmp is None else []:
                mem.store.purge_user(u)
        mem.close()
        if tmp is not None and not opts.keep_store:
            shutil.rmtree(tmp, ignore_errors=True)
    rep["meta"]["wall_s"] = round(time.perf_counter() - t0, 2)
    if opts.out:
        from evaluation.report import write_outputs

        rep["meta"]["outputs"] = [str(p) for p in write_outputs(rep, opts.out, questions)]
    if opts.as_json:
        print(json.dumps(rep, default=str))
    else:
        from evaluation.report import markdown

        print(markdown(rep))
    return 0


def _bar(opts: EvalOptions, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=0, desc=desc, unit="q", disable=not opts.progress, file=sys.stderr)


def _run_dialogue(opts: EvalOptions, ing: Any, mem: Any, prefix: str, meta: dict[str, Any]) -> tuple[dict[str, Any], list[Any], list[str]]:
    from evaluation import beam, locomo
    from evaluation.harness import Harness, HarnessConfig
    from evaluation.report import build_report
    from retrieval.retrieve import RetrievalConfig

    module = locomo if opts.benchmark == "locomo" else beam
    episodes = (locomo.locomo_episodes(opts.data, user_prefix=prefix) if opts.benchmark == "locomo"
                else beam.beam_episodes(opts.data, user_prefix=f"{prefix}beam-"))
    retrieval = RetrievalConfig.model_validate(mem.retrieval.model_dump() | {"k": opts.k} | (opts.retrieval or {}))
    cfg_kw: dict[str, Any] = {"k": opts.k, "budget": opts.budget, "baseline_k": opts.baseline_k, "ablations": opts.ablations,
                              "min_score_ratio": opts.min_score_ratio, "depth_ratios": tuple(opts.depth_ratios or ()),
                              "retrieval": retrieval, "limit_conversations": opts.limit_conversations,
                              "limit_sessions": opts.limit_sessions, "limit_questions": opts.limit_questions,
                              "answer_prompt": "locomo" if opts.benchmark == "locomo" else "default"}
    if opts.baselines is not None:
        cfg_kw["baselines"] = tuple(opts.baselines)
    elif opts.budget is None:
        cfg_kw["baselines"] = ("naive_rag", "bm25", "rrf", "full_context")
    cfg = HarnessConfig(**cfg_kw)
    policy = _policy(opts)
    harness = Harness(ing, cfg, policy=policy, answers=_answer_setup(opts, mem, policy, module))
    bar = _bar(opts, opts.benchmark)
    total = {"n": 0}

    def progress(ep: str, n: int, tot: int) -> None:
        if n == 1:
            total["n"] += tot
            bar.total = total["n"]
        bar.set_postfix_str(ep)
        bar.update(1)

    try:
        run = harness.run(episodes, progress)
    finally:
        bar.close()
    meta["policy_errors"] = harness.policy_errors
    if harness.answers is not None:
        meta["answer_model"] = getattr(harness.answers.chat, "name", "?")
        meta["answer_prompt"] = cfg.answer_prompt
        meta["judge_prompt"] = harness.answers.judge.version if harness.answers.judge else None
        meta["judge_errors"] = harness.answers.judge.errors if harness.answers.judge else None
    users = [e.user_id for e in episodes[: cfg.limit_conversations or len(episodes)]]
    return build_report(run, opts.benchmark, meta, n_boot=opts.bootstrap), run.questions, users


def _run_memsyco(opts: EvalOptions, ing: Any, prefix: str) -> dict[str, Any]:
    from evaluation.memsyco import memsyco_report

    bar = _bar(opts, "memsyco")

    def progress(task: str, n: int, tot: int) -> None:
        bar.set_postfix_str(task)
        bar.total = tot
        bar.n = n
        bar.refresh()

    try:
        return memsyco_report(opts.data, ing, k=opts.k, threshold=opts.threshold, matching=opts.matching,
                              limit=opts.limit_questions or opts.limit_conversations, tasks=opts.tasks, skip=opts.skip_rows,
                              user_prefix=f"{prefix}memsyco-", progress=progress)
    finally:
        bar.close()


COMMANDS: dict[str, Command] = {
    "eval": (EvalOptions, cmd_eval, "Benchmark evaluation (retrieval + memory-use metrics, baselines and ablations in "
             "one run): eval locomo|memsyco|beam --data DIR; eval phrasing --half test|tune|all."),
}
