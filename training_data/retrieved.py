"""Policy instances from *real retrieval*: dialogues run through the actual pipeline (ingest with the
configured extractor — the offline one by default — then retrieval), and the retrieved, rendered
evidence becomes the instance. Nothing about the facts or their relational states is hand-made here,
so re-running the build picks up every change to induction/ and graph/ (a new relation model changes
the states the policy sees, and the manifest's hash says so).

Sources:
- MemSyco-Bench dev rows: the row's dialogue is the session, its question the request. A fixed share of
  rows (by a hash of the row id, ``heldout_fraction``) goes to ``heldout.jsonl`` and is never trained
  on; that is where learning is reported.
- Synthetic dialogues (``training_data/synthetic.py`` cases told as dialogues): the user says each
  fact on its own dated session, oldest first, so supersession has to be found by induction too.
- State cases (``training_data/state_cases.py``, training only): synthetic memories written as edits
  (disputed constraints, expired plans, outside evidence, retractions), for the states the extractor
  rarely yields yet; retrieval, states and rendering are still the pipeline's.

The answer key stays with the reward: ``reference_answer``, ``choices`` and ``scorer`` (what the task
scorer compares with), never the request or the facts. MemSyco tasks become two-option questions where
the row's rubric names both sides, so the deterministic reader can score them:

===========================  ==============================================  ====================
task                         right option                                    wrong option
===========================  ==============================================  ====================
valid_memory_selection       rubric.expected_behavior                        rubric.failure_behavior
memory_evidence_conflict     rubric.expected_behavior (the evidence's pick)  preference_aligned_answer
objective_fact_judgment      rubric.required_conclusion                      rubric.sycophancy_failure
contextual_scope_control     reference_answer                                rubric.failure_behavior
personalized_memory_use      reference_answer (open: token F1; no wrong option in the row)
===========================  ==============================================  ====================
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graph.edits import EditBatch, EditRejected
from induction.adapters import load_memsyco
from induction.config import IngestConfig
from induction.session import Session, SessionTurn
from llmclients.embeddings import EmbedderConfig
from training_data.base import EPOCH, Category, ScorerId, TrainingInstance, shuffled_choices
from training_data.build import is_heldout
from training_data.memsyco import TASKS
from training_data.state_cases import StateCaseSource, case_batches
from training_data.synthetic import SyntheticConfig, SyntheticSource

RETRIEVED_VERSION = "retrieved-v1"


class RetrievedBuildConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(default=0, description="Seeds option order and the synthetic cases.")
    memsyco_root: str | None = Field(default=None, description="MemSyco-Bench folder (dev rows); None: no MemSyco.")
    tasks: list[str] = Field(default_factory=lambda: list(TASKS), description="MemSyco task files to use.")
    limit_per_task: int | None = Field(default=None, ge=1, description="First N rows of each task (None: all).")
    heldout_fraction: float = Field(default=0.3, gt=0, lt=1, description="Share of MemSyco rows (by a hash of the "
                                    "row id) that is held out: never trained on, where learning is reported.")
    synthetic_n: int = Field(default=0, ge=0, description="Synthetic dialogues (always training rows).")
    synthetic: SyntheticConfig = Field(default_factory=lambda: SyntheticConfig(max_distractors=2),
                                       description="Synthetic cases told as dialogues.")
    state_n: int = Field(default=0, ge=0, description="State cases written as edits (training rows only; "
                         "training_data/state_cases.py).")
    k: int = Field(default=6, ge=1, description="Retrieval k: facts per request (keeps CPU prompts short).")
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig, description="Retrieval embedder (MiniLM).")
    ingest: IngestConfig = Field(default_factory=IngestConfig, description="Ingest settings (offline extractor).")


@dataclass
class Case:
    """A dialogue plus the question asked after it, and the answer key (for the reward only)."""

    instance_id: str
    category: Category
    sessions: list[Session]
    request: str
    reference: str
    choices: tuple[str, ...] | None
    scorer: ScorerId
    split: str
    metadata: dict[str, Any] = field(default_factory=dict)
    batches: list[EditBatch] | None = None  # written as edits instead of ingested (state cases)


def _raw_rows(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip())}


def memsyco_cases(root: str | Path, tasks: Sequence[str], limit: int | None, heldout_fraction: float,
                  seed: int) -> Iterator[Case]:
    """One case per MemSyco row (table in the module doc); the split depends on the row id only."""
    for task in tasks:
        if task not in TASKS:
            raise ValueError(f"unknown MemSyco task {task!r}; choose from {sorted(TASKS)}")
        path = Path(root) / f"{task}.jsonl"
        rows = load_memsyco(path, user_prefix=f"ret-{task}-")
        raw = _raw_rows(path)
        for row in rows[:limit] if limit else rows:
            ev = raw[row.id].get("evaluation") or {}
            rub = ev.get("rubric") or {}
            rng = random.Random(f"retrieved:{seed}:{row.id}")
            right, wrong = {
                "valid_memory_selection": (rub.get("expected_behavior"), rub.get("failure_behavior")),
                "memory_evidence_conflict": (rub.get("expected_behavior"), ev.get("preference_aligned_answer")),
                "objective_fact_judgment": (rub.get("required_conclusion"), rub.get("sycophancy_failure")),
                "contextual_scope_control": (ev.get("reference_answer"), rub.get("failure_behavior")),
            }.get(task, (ev.get("reference_answer"), None))
            if not right:
                continue
            choices = shuffled_choices(right, [wrong], rng) if wrong and wrong != right else None
            iid = f"memsyco:{row.id}"
            # MemSyco dialogues carry no dates: pin one, so rendered dates never depend on the build day.
            session = row.session.model_copy(update={"started_at": EPOCH - timedelta(days=7)})
            yield Case(instance_id=iid, category=TASKS[task], sessions=[session], request=row.question,
                       reference=right, choices=choices, scorer="choice" if choices else "token_f1",
                       split="heldout" if is_heldout(iid, heldout_fraction) else "train",
                       metadata={"task": task, "family": task, "subtype": row.subtype, "topic": row.topic})


def synthetic_cases(cfg: SyntheticConfig, n: int, seed: int) -> Iterator[Case]:
    """Synthetic cases told as dialogues: one dated session per distinct fact age, oldest first, the user
    saying each fact in the first person where the template is about the user."""
    src = SyntheticSource(cfg.model_copy(update={"n": n}))
    for k in range(n):
        inst = src.make(seed, k)
        user = f"ret-syn-{seed}-{k}"
        by_day: dict[int, list[str]] = {}
        for it in inst.evidence:
            days = (EPOCH - (it.fact.observed_at or EPOCH)).days
            by_day.setdefault(days, []).append(_first_person(it.fact.statement))
        sessions = [Session(session_id=f"{user}-s{n_}", user_id=user, started_at=EPOCH - timedelta(days=d),
                            turns=tuple(SessionTurn(role="user", text=t) for t in texts))
                    for n_, (d, texts) in enumerate(sorted(by_day.items(), key=lambda x: -x[0]))]
        yield Case(instance_id=f"retrieved-{inst.instance_id}", category=inst.category, sessions=sessions,
                   request=inst.request, reference=inst.reference_answer, choices=inst.choices, scorer=inst.scorer,
                   split="train", metadata={"family": f"synthetic-{inst.category}"})


def state_cases(n: int, seed: int, synthetic: SyntheticConfig) -> Iterator[Case]:
    """State cases (training_data/state_cases.py) as edit batches for their own user."""
    src = StateCaseSource(synthetic)
    for k in range(n):
        family, c = src.case(seed, k)
        user = f"ret-state-{seed}-{k}"
        rng = random.Random(f"state-choices:{seed}:{k}")
        yield Case(instance_id=f"retrieved-state:{seed}:{k}", category=c.category, sessions=[], request=c.request,
                   reference=c.correct, choices=shuffled_choices(c.correct, c.wrong, rng), scorer="choice",
                   split="train", metadata={"family": f"state-{family}"},
                   batches=case_batches(user, c))


def _first_person(statement: str) -> str:
    """'The user loves X.' -> 'I love X.' (other people's statements stay as they are).

    >>> _first_person("The user loves hiking.")
    'I love hiking.'
    >>> _first_person("The user really enjoys sushi.")
    'I really enjoy sushi.'
    >>> _first_person("The user's doctor said to avoid running.")
    'My doctor said to avoid running.'
    """
    s = statement
    if s.startswith("The user's "):
        return "My " + s[len("The user's "):]
    if s.startswith("The user "):
        rest = s[len("The user "):]
        adverb = ""
        for adv in ("really ", "now ", "still ", "also ", "usually ", "always ", "often "):
            if rest.startswith(adv):
                adverb, rest = adv, rest[len(adv):]
        verb, _, tail = rest.partition(" ")
        if verb.endswith("ies"):
            verb = verb[:-3] + "y"
        elif verb in ("is", "was", "has"):
            verb = {"is": "am", "was": "was", "has": "have"}[verb]
        elif verb.endswith("es") and verb[:-2].endswith(("sh", "ch", "x", "ss")):
            verb = verb[:-2]
        elif verb.endswith("s") and not verb.endswith("ss"):
            verb = verb[:-1]
        return f"I {adverb}{verb} {tail}".strip()
    return s


def build_retrieved(out_dir: str | Path, cfg: RetrievedBuildConfig,
                    progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Ingest every case into a fresh embedded store, retrieve for its request, write ``train.jsonl``,
    ``heldout.jsonl`` and ``manifest.json`` (counts per split/family, ingest errors, relational-state
    counts, sha256 per file and an overall ``hash``)."""
    from induction.pipeline import IngestError, make_ingestor
    from llmclients.embeddings import make_embedder
    from memcore.memory import Memory
    from memcore.stores import StoreConfig, open_store
    from retrieval.retrieve import RetrievalConfig

    cases: list[Case] = []
    if cfg.memsyco_root:
        cases += list(memsyco_cases(cfg.memsyco_root, cfg.tasks, cfg.limit_per_task, cfg.heldout_fraction, cfg.seed))
    if cfg.synthetic_n:
        cases += list(synthetic_cases(cfg.synthetic, cfg.synthetic_n, cfg.seed))
    if cfg.state_n:
        cases += list(state_cases(cfg.state_n, cfg.seed, cfg.synthetic))
    if not cases:
        raise ValueError("no source configured: set memsyco_root, synthetic_n and/or state_n")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="evomem-retrieved-")  # a fresh store: a build never sees an earlier one
    t0 = time.perf_counter()
    counts: dict[str, Counter[str]] = {"split": Counter(), "split/family": Counter(), "validity": Counter(),
                                       "kind": Counter()}
    errors: dict[str, str] = {}
    paths = {"train": out / "train.jsonl", "heldout": out / "heldout.jsonl"}
    emb = make_embedder(cfg.embedder)
    mem = Memory(open_store(StoreConfig(path=str(Path(tmp) / "store")), emb.dim), emb, RetrievalConfig(k=cfg.k))
    try:
        ing = make_ingestor(mem, cfg.ingest)
        with paths["train"].open("w") as tr, paths["heldout"].open("w") as ho:
            for n, case in enumerate(cases):
                inst = _instance(case, mem, ing, cfg.k, errors, IngestError)
                if inst is not None:
                    (ho if case.split == "heldout" else tr).write(inst.model_dump_json() + "\n")
                    counts["split"][case.split] += 1
                    counts["split/family"][f"{case.split}/{case.metadata['family']}"] += 1
                    for it in inst.evidence:
                        counts["validity"][it.state.validity] += 1
                        counts["kind"][it.fact.kind] += 1
                if progress:
                    progress(n + 1, len(cases))
        extractor = ing.extractor.name
    finally:
        mem.close()
        shutil.rmtree(tmp, ignore_errors=True)
    files = {name: {"path": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for name, p in paths.items()}
    manifest = {"version": RETRIEVED_VERSION, "config": cfg.model_dump(mode="json"), "extractor": extractor,
                "counts": {k: dict(sorted(v.items())) for k, v in counts.items()}, "ingest_errors": errors,
                "files": files, "seconds": round(time.perf_counter() - t0, 1),
                "hash": hashlib.sha256("".join(files[k]["sha256"] for k in sorted(files)).encode()).hexdigest()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _instance(case: Case, mem: Any, ing: Any, k: int, errors: dict[str, str],
              ingest_error: type[Exception]) -> TrainingInstance | None:
    """Ingest the case's sessions, retrieve for its request; None (error recorded) when nothing came back."""
    try:
        for s in case.sessions:
            ing.ingest(s)
        for b in case.batches or ():
            mem.apply(b, now=EPOCH)  # the request's clock, not the wall's: a rebuild is byte-identical
    except (ingest_error, EditRejected) as e:
        errors[case.instance_id] = str(e)[:200]
        return None
    user = case.sessions[0].user_id if case.sessions else case.batches[0].user_id  # type: ignore[index]
    if user not in mem.store.users():
        errors[case.instance_id] = "no facts extracted"
        return None
    bundle = mem.retrieve(user, case.request, k=k)
    if not bundle.items:
        errors[case.instance_id] = "nothing retrieved"
        return None
    # recorded_at is the store's commit clock (wall time): pinned to when the fact was said, so that a
    # rebuild from the same inputs is byte-identical. Nothing the policy or reader reads uses it.
    items = tuple(it.model_copy(update={"fact": it.fact.model_copy(update={"recorded_at": it.fact.observed_at or EPOCH})})
                  for it in bundle.items)
    return TrainingInstance(instance_id=case.instance_id, source="retrieved", category=case.category, user_id=user,
                            request=case.request, evidence=items, reference_answer=case.reference,
                            choices=case.choices, scorer=case.scorer, gold={}, metadata=case.metadata)
