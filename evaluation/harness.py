"""The evaluation loop: ingest a conversation session by session in time order, ask each question
only once the sessions before it are in memory, and score every system on the same question.

Per question, in one pass: our system (``Memory.retrieve`` = K seeds + relation traversal, rendered
by ``retrieval.render.render_context`` under the token budget), its ablations (no traversal = seeds
only; no relational states = facts rendered without states; no Reasoning State = same context, no
policy output, reported only when answers are graded with a policy: its retrieval is ours), and the turn baselines over exactly the turns ingested so far. The query is
embedded once and shared, so every system pays the same embedding and is timed with it.

No future leakage: a question carries ``after_session`` (how many of its conversation's sessions,
in time order, precede it; LoCoMo and BEAM ask after all of them). Gold evidence ids that name no
ingested turn are *unresolved*: they are counted per question and reported, never silently dropped;
a question left with no resolvable gold evidence is not scored for retrieval.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evaluation.baselines import BASELINES, BaselineName, TurnIndex
from evaluation.metrics import score_evidence, turns_of_facts, whitespace_tokens
from retrieval.render import render_context
from retrieval.retrieve import EvidenceBundle, RetrievalConfig
from graph.store import StoreError
from induction.pipeline import IngestError, Ingestor
from induction.session import Session
from llmclients.chat import ChatModel
from llmclients.embeddings import Embedder
from policy.base import Policy
from scoring.answers import answer_recall
from scoring.judge import Judge
from serving.pipeline import AnswerPipeline

SYSTEM = "evomem"
ABLATIONS = ("no_traversal", "no_relational_states", "no_reasoning_state")
Variant = Literal["evomem", "no_traversal", "no_relational_states", "no_reasoning_state", "naive_rag", "bm25", "rrf",
                  "naive_rag_budget", "full_context"]


class EvalQuestion(BaseModel):
    model_config = ConfigDict(frozen=True)
    qid: str = Field(description="Unique within the run, e.g. 'conv-26#12'.")
    question: str
    answer: str | None = Field(default=None, description="Gold answer (answer metrics only).")
    category: str = Field(description="LoCoMo numeric category as text, BEAM ability, ...")
    evidence_ids: tuple[str, ...] = Field(default=(), description="Gold evidence turn ids (the dataset's own ids).")
    malformed_evidence: tuple[str, ...] = Field(default=(), description="Raw evidence entries that name no turn id at all.")
    scored: bool = Field(default=True, description="Counts toward the top-level retrieval metrics (else by category only).")
    after_session: int | None = Field(default=None, ge=0, description="Sessions (time order) ingested before it is "
                                      "asked; None = after all of them.")
    meta: dict[str, Any] = Field(default_factory=dict, description="Benchmark-specific fields for answer scoring.")


class Episode(BaseModel):
    """One conversation = one memory user."""

    model_config = ConfigDict(frozen=True)
    episode_id: str
    user_id: str
    sessions: tuple[Session, ...]
    questions: tuple[EvalQuestion, ...]


class HarnessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(default=10, ge=1, le=1000, description="Seed facts per question (our system) = K.")
    budget: int | None = Field(default=600, ge=1, description="Whitespace-token budget of the rendered context "
                               "(None = everything retrieval returns).")
    baseline_k: int | None = Field(default=None, ge=1, description="Turns per question for the K baselines (None = k).")
    baselines: tuple[BaselineName, ...] = Field(default=BASELINES, description="Turn baselines to run alongside.")
    ablations: bool = Field(default=True, description="Also score the ablations (no_reasoning_state only with answers and a policy).")
    min_score_ratio: float | None = Field(default=None, gt=0, lt=1, description="Adaptive depth of our system: stop "
                                          "rendering at the first group whose fused seed score is below this share of the top one.")
    depth_ratios: tuple[float, ...] = Field(default=(), description="Also score our bundle rendered at each of these "
                                            "adaptive-depth ratios (depth_<r>; rendering only, for calibration).")
    route_ablations: bool = Field(default=True, description="Also score each seed route left out in turn "
                                  "(no_route_<name>), so every route's contribution shows in the same run.")
    retrieval: RetrievalConfig | None = Field(default=None, description="Seed-search settings for this run (dense/text "
                                              "candidates, RRF k, traversal caps); None = the Memory's own.")
    rrf_k: int = Field(default=60, ge=1, description="RRF constant of the fused turn baseline.")
    limit_conversations: int | None = Field(default=None, ge=1, description="Only the first N conversations.")
    limit_sessions: int | None = Field(default=None, ge=1, description="Only the first N sessions of each conversation "
                                       "(in time order); evidence in later sessions then counts as unresolved.")
    limit_questions: int | None = Field(default=None, ge=1, description="Only the first N questions of each conversation.")
    answer_prompt: str = Field(default="default", description="Answer prompt (policy/answer_prompts) used for answers.")
    answer_variants: tuple[Variant, ...] = Field(
        default=("evomem", "no_traversal", "no_relational_states", "no_reasoning_state", "naive_rag", "full_context"),
        description="Which systems get answers when an answer model is configured.")

    @model_validator(mode="after")
    def _check(self) -> HarnessConfig:
        if "naive_rag_budget" in self.baselines and self.budget is None:
            raise ValueError("the naive_rag_budget baseline needs a token budget (--budget)")
        return self


class Outcome(BaseModel):
    """What one system did for one question."""

    n_hit: int | None = Field(default=None, description="Gold turns recovered (None: question has no resolvable gold).")
    tokens: int = Field(default=0, description="Whitespace tokens of the context it produced.")
    state_tokens: int = Field(default=0, description="Whitespace tokens of the Reasoning State (our system).")
    items: int = Field(default=0, description="Facts or turns in the context.")
    answer_recall: float | None = Field(default=None, description=(
        "Share of the gold answer's tokens the context contains (scoring.answers.answer_recall); None "
        "without a gold answer."))
    latency_ms: float | None = None
    answer: str | None = None
    f1: float | None = None
    judge: bool | None = None


class QuestionRecord(BaseModel):
    qid: str
    episode: str
    category: str
    scored: bool = Field(description="In the top-level retrieval metrics: a top-level category with resolvable gold.")
    top_level: bool = Field(default=True, description="In a top-level category (answer metrics use all of these).")
    n_gold: int
    gold: list[str]
    unresolved: list[str] = Field(default_factory=list, description="Gold ids naming no ingested turn.")
    malformed: list[str] = Field(default_factory=list)
    gold_with_fact: int = Field(default=0, description="Gold turns that at least one stored fact cites.")
    outcomes: dict[str, Outcome] = Field(default_factory=dict)


class SessionRecord(BaseModel):
    episode: str
    session_id: str
    status: Literal["committed", "unchanged", "error"]
    ms: float
    turns: int
    facts_added: int = 0
    error: str | None = None


class RunResult(BaseModel):
    config: HarnessConfig
    questions: list[QuestionRecord]
    sessions: list[SessionRecord]
    seconds: float
    episodes: int
    judge_check: dict[str, Any] | None = Field(default=None, description="The judge graded other questions' references as "
                                               "answers (all wrong): the share it accepted is its false-accept rate.")


class _PrimedEmbedder:
    """Wraps the Memory's embedder so a query embedded once by the harness is not embedded again by
    each retrieval variant, and a turn text the turn baselines embedded is not embedded again by the
    memory's turn route ("<speaker>: <text>" in both); everything else passes through."""

    def __init__(self, inner: Embedder, memo_cap: int = 50_000):
        self.inner, self.dim = inner, inner.dim
        self.primed: dict[str, np.ndarray] = {}
        self.memo: dict[str, np.ndarray] = {}
        self.memo_cap = memo_cap

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if texts and all(t in self.primed for t in texts):
            return np.stack([self.primed[t] for t in texts])
        todo = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if todo:
            for t, v in zip(todo, self.inner.embed(todo)):
                if len(self.memo) < self.memo_cap:
                    self.memo[t] = v
                else:
                    return self.inner.embed(texts)
        return np.stack([self.memo[t] for t in texts]) if texts else self.inner.embed(texts)


def time_ordered(sessions: Sequence[Session]) -> list[Session]:
    """Sessions by start time when every session has one (stable), else in file order."""
    if all(s.started_at is not None for s in sessions):
        return sorted(sessions, key=lambda s: s.started_at)  # type: ignore[arg-type, return-value]
    return list(sessions)


Scorer = Callable[[EvalQuestion, str], float | None]
Progress = Callable[[str, int, int], None]


class AnswerSetup:
    """Optional answer metrics: ``pipeline`` answers for our system, ``chat`` for the baselines."""

    def __init__(self, pipeline: AnswerPipeline, chat: ChatModel, judge: Judge | None, scorer: Scorer,
                 reference: Callable[[EvalQuestion], str | None]):
        self.pipeline, self.chat, self.judge, self.scorer, self.reference = pipeline, chat, judge, scorer, reference


class Harness:
    def __init__(self, ingestor: Ingestor, config: HarnessConfig | None = None, policy: Policy | None = None,
                 answers: AnswerSetup | None = None):
        self.ingestor, self.memory = ingestor, ingestor.memory
        self.cfg = config or HarnessConfig()
        self.policy, self.answers = policy, answers
        self.policy_errors = 0
        self._judged: list[tuple[str, str]] = []  # (question, reference) pairs, for the judge's control check

    # ------------------------------------------------------------------ run
    def run(self, episodes: Sequence[Episode], progress: Progress | None = None) -> RunResult:
        cfg = self.cfg
        episodes = list(episodes)[: cfg.limit_conversations] if cfg.limit_conversations else list(episodes)
        mem = self.memory
        saved_emb, saved_ret = mem.embedder, mem.retrieval
        self.base = saved_emb
        self.primed = _PrimedEmbedder(saved_emb)
        mem.embedder = self.primed  # type: ignore[assignment]
        if cfg.retrieval is not None:
            mem.retrieval = cfg.retrieval
        t0 = time.perf_counter()
        questions: list[QuestionRecord] = []
        sessions: list[SessionRecord] = []
        try:
            for ep in episodes:
                self._episode(ep, questions, sessions, progress)
        finally:
            mem.embedder, mem.retrieval = saved_emb, saved_ret
        return RunResult(config=cfg, questions=questions, sessions=sessions, seconds=round(time.perf_counter() - t0, 2),
                         episodes=len(episodes), judge_check=self._judge_check())

    def _judge_check(self, n: int = 20) -> dict[str, Any] | None:
        """A control for the judge: each question's answer is replaced by the *next* question's reference
        (wrong by construction). A judge that accepts many of them makes judge accuracy meaningless."""
        if self.answers is None or self.answers.judge is None or len(self._judged) < 2:
            return None
        pairs = self._judged[:n]
        verdicts = [self.answers.judge.grade(q, ref, pairs[(i + 1) % len(pairs)][1]) for i, (q, ref) in enumerate(pairs)]
        got = [v.correct for v in verdicts if v is not None]
        return {"n": len(got), "false_accept_rate": round(sum(got) / len(got), 4) if got else None,
                "unparsed": len(verdicts) - len(got)}

    def _episode(self, ep: Episode, out: list[QuestionRecord], srecs: list[SessionRecord],
                 progress: Progress | None) -> None:
        cfg = self.cfg
        sessions = time_ordered(ep.sessions)
        if cfg.limit_sessions:
            sessions = sessions[: cfg.limit_sessions]
        qs = list(ep.questions)[: cfg.limit_questions] if cfg.limit_questions else list(ep.questions)
        when: dict[int, list[EvalQuestion]] = {}
        for q in qs:
            at = len(sessions) if q.after_session is None else min(q.after_session, len(sessions))
            when.setdefault(at, []).append(q)
        index = TurnIndex(self.primed, cfg.rrf_k) if cfg.baselines else None  # type: ignore[arg-type]
        ingested: set[str] = set()
        done = 0
        for q in when.pop(0, []):  # asked before any session: nothing can be retrieved
            out.append(self._ask(ep, q, index, ingested))
        for n, s in enumerate(sessions, start=1):
            srecs.append(self._ingest(ep, s))
            if srecs[-1].status != "error":
                ingested |= {s.turn_id(i) for i in range(len(s.turns))}
                if index is not None:
                    index.add([(s.turn_id(i), t.role, t.text) for i, t in enumerate(s.turns)])
            asked = when.pop(n, [])
            if asked:
                fact_turns = self._fact_turns(ep.user_id)
                for q in asked:
                    out.append(self._ask(ep, q, index, ingested, fact_turns))
                    done += 1
                    if progress:
                        progress(ep.episode_id, done, len(qs))

    def _ingest(self, ep: Episode, s: Session) -> SessionRecord:
        t0 = time.perf_counter()
        try:
            rep = self.ingestor.ingest(s)
        except IngestError as e:
            return SessionRecord(episode=ep.episode_id, session_id=s.session_id, status="error", turns=len(s.turns),
                                 ms=round((time.perf_counter() - t0) * 1e3, 2), error=str(e))
        return SessionRecord(episode=ep.episode_id, session_id=s.session_id, status=rep.status, turns=len(s.turns),
                             facts_added=rep.facts_added, ms=round((time.perf_counter() - t0) * 1e3, 2))

    def _fact_turns(self, user_id: str) -> set[str]:
        try:
            snap = self.memory.store.load_snapshot(user_id)
        except StoreError:
            return set()
        return {t for f in snap.facts.values() for t in f.source_turn_ids}

    # ------------------------------------------------------------------ one question
    def _ask(self, ep: Episode, q: EvalQuestion, index: TurnIndex | None, ingested: set[str],
             fact_turns: set[str] | None = None) -> QuestionRecord:
        cfg = self.cfg
        gold = [e for e in dict.fromkeys(q.evidence_ids) if e in ingested]
        rec = QuestionRecord(qid=q.qid, episode=ep.episode_id, category=q.category, scored=q.scored and bool(gold),
                             top_level=q.scored,
                             n_gold=len(gold), gold=gold, unresolved=[e for e in q.evidence_ids if e not in ingested],
                             malformed=list(q.malformed_evidence),
                             gold_with_fact=sum(1 for g in gold if g in (fact_turns or set())))
        if not gold and self.answers is None:
            return rec  # nothing to score: the question is counted as unresolved only
        t0 = time.perf_counter()
        qv = self.base.embed([q.question])[0]
        embed_ms = (time.perf_counter() - t0) * 1e3
        self.primed.primed = {q.question: qv}

        def fact_outcome(bundle: EvidenceBundle | None, with_state: bool, ms: float, state_tokens: int = 0,
                         ratio: float | None = cfg.min_score_ratio) -> Outcome:
            if bundle is None:
                return Outcome(n_hit=0 if gold else None, latency_ms=ms)
            ctx = render_context(bundle, cfg.budget, with_state=with_state, min_score_ratio=ratio)
            by_id = bundle.by_id()
            turns = turns_of_facts(by_id[i].fact for i in ctx.included)
            return Outcome(n_hit=score_evidence(gold, turns).n_hit if gold else None, tokens=ctx.tokens, items=len(ctx.included),
                           state_tokens=state_tokens, latency_ms=round(ms, 3),
                           answer_recall=answer_recall(ctx.text, q.answer) if q.answer else None)

        bundle, ms = self._retrieve(ep.user_id, q.question, traverse=None)
        full = fact_outcome(bundle, True, embed_ms + ms, self._state_tokens(q.question, bundle))
        rec.outcomes[SYSTEM] = full
        for r in cfg.depth_ratios:
            rec.outcomes[f"depth_{r}"] = fact_outcome(bundle, True, embed_ms + ms, full.state_tokens, ratio=r)
        if cfg.ablations:
            seeds, ms2 = self._retrieve(ep.user_id, q.question, traverse=False)
            rec.outcomes["no_traversal"] = fact_outcome(seeds, True, embed_ms + ms2, full.state_tokens)
            if bundle is not None:
                from serving.pipeline import without_states

                t1 = time.perf_counter()
                plain = without_states(bundle)
                rec.outcomes["no_relational_states"] = fact_outcome(plain, False, embed_ms + ms + (time.perf_counter() - t1) * 1e3,
                                                                    full.state_tokens)
            else:
                rec.outcomes["no_relational_states"] = full.model_copy()
            if cfg.route_ablations:
                routes = tuple(self.memory.retrieval.routes)
                for route in routes:
                    b, ms3 = self._retrieve(ep.user_id, q.question, traverse=None, routes=tuple(x for x in routes if x != route))
                    rec.outcomes[f"no_route_{route}"] = fact_outcome(b, True, embed_ms + ms3, full.state_tokens)
            if self.answers is not None and self.policy is not None:
                # Its retrieval is ours by construction; only the graded answer (without a state) is a
                # measurement, so without answers it would be a copy of the full run: not reported.
                rec.outcomes["no_reasoning_state"] = full.model_copy(update={"state_tokens": 0})
        if index is not None:
            bk = cfg.baseline_k or cfg.k
            for name in cfg.baselines:
                hit = index.search(name, q.question, qv, bk, cfg.budget, embed_ms)
                rec.outcomes[name] = Outcome(n_hit=score_evidence(gold, hit.turn_ids).n_hit if gold else None,
                                             tokens=hit.tokens, items=len(hit.turn_ids), latency_ms=round(hit.latency_ms, 3),
                                             answer_recall=(answer_recall(index.context(hit.turn_ids), q.answer)
                                                            if q.answer else None))
                if self.answers is not None and name in cfg.answer_variants:
                    rec.outcomes[name].answer = self._baseline_answer(q, index.context(hit.turn_ids))
        if self.answers is not None:
            self._answer_ours(ep, q, rec)
            self._grade(q, rec)
        self.primed.primed = {}
        return rec

    def _retrieve(self, user_id: str, query: str, traverse: bool | None,
                  routes: tuple[str, ...] | None = None) -> tuple[EvidenceBundle | None, float]:
        t0 = time.perf_counter()
        try:
            bundle = self.memory.retrieve(user_id, query, k=self.cfg.k, traverse=traverse, routes=routes)
        except StoreError:  # e.g. every session of this user failed to ingest: nothing stored
            bundle = None
        return bundle, (time.perf_counter() - t0) * 1e3

    def _state_tokens(self, query: str, bundle: EvidenceBundle | None) -> int:
        if self.policy is None or bundle is None or not bundle.items:
            return 0
        from llmclients.chat import ChatError
        from policy.state import StateParseError

        try:
            return whitespace_tokens(self.policy.state(query, bundle).render())
        except (StateParseError, ChatError):  # a learned policy's bad output or a dead endpoint: no state
            self.policy_errors += 1
            return 0

    # ------------------------------------------------------------------ answers (optional)
    def _baseline_answer(self, q: EvalQuestion, context: str) -> str | None:
        from evaluation.answers import answer_from_turns
        from llmclients.chat import ChatError

        assert self.answers is not None
        try:
            return answer_from_turns(self.answers.chat, self.cfg.answer_prompt, q.question, context)
        except ChatError:
            return None

    def _answer_ours(self, ep: Episode, q: EvalQuestion, rec: QuestionRecord) -> None:
        from llmclients.chat import ChatError

        assert self.answers is not None
        pipe = self.answers.pipeline
        with_state = self.policy is not None
        switches = {SYSTEM: {}, "no_traversal": {"traverse": False}, "no_relational_states": {"relational_states": False},
                    "no_reasoning_state": {"reasoning_state": False}}
        for name, sw in switches.items():
            if name not in self.cfg.answer_variants or name not in rec.outcomes:
                continue
            opts: dict[str, Any] = {"k": self.cfg.k, "context_budget": self.cfg.budget, "prompt": self.cfg.answer_prompt,
                                    "reasoning_state": with_state, **sw}
            try:
                res = pipe.answer(ep.user_id, q.question, **opts)
                rec.outcomes[name].answer = res.answer
            except (ChatError, StoreError):
                rec.outcomes[name].answer = None

    def _grade(self, q: EvalQuestion, rec: QuestionRecord) -> None:
        assert self.answers is not None
        ref = self.answers.reference(q)
        for o in rec.outcomes.values():
            if o.answer is None:
                continue
            o.f1 = self.answers.scorer(q, o.answer)
            if self.answers.judge is not None and ref is not None:
                v = self.answers.judge.grade(q.question, ref, o.answer)
                o.judge = None if v is None else v.correct
        if ref is not None and len(self._judged) < 50 and all(ref != r for _, r in self._judged):
            self._judged.append((q.question, ref))
