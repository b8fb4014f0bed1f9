"""Synthetic cases written to the store as edits, then retrieved: training rows with the relational
states that dialogues rarely yield today.

Why: a per-fact policy has to read every state, but the offline extractor turns the synthetic dialogues
into almost only current facts (904 current, 27 superseded, 0 disputed in session 9's build), and the
MemSyco dialogues give no expired fact and no disputed constraint (docs/design-notes.md, note 39). Here a
case's memory is recorded the way a capable extractor and relation model would record it — facts with
kind, holder and validity window, SUPERSEDES/CONFLICTS_WITH edges, a retraction as a later batch —
through ``Memory.apply``, one batch per day; retrieval, state derivation and rendering are then the real
pipeline's (``training_data.retrieved``). These rows are training rows only: held-out rows stay MemSyco
dialogues run through the extractor.

Families (``STATE_FAMILIES``), each with a side the memory supports and a misleading side, usually said
twice:
- disputed-constraint: an allergy or injury in conflict with a later experience that seems to lift it;
  the safe answer follows the constraint;
- expired-plan: a plan whose window has passed, beside where the user lives now;
- outside-evidence: the user's belief in conflict with what the assistant or a document reported;
- retracted: a preference the user took back, beside one that stands;
- written: a ``training_data.synthetic`` case (update, constraint, scope, ...) with its relations as edits.

Deterministic: case ``i`` of seed ``s`` is drawn from ``random.Random(f"state:{s}:{i}")``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from graph.edits import AttachFact, Conflict, EditBatch, OntologyEdit, Retract, Supersede
from graph.models import Fact, Turn
from training_data.base import EPOCH, FactSpec
from training_data.synthetic import Case, SyntheticConfig, SyntheticSource, domain, fill, templates as synthetic_templates

STATE_FAMILIES: tuple[str, ...] = ("disputed-constraint", "expired-plan", "outside-evidence", "retracted", "written")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


@cache
def templates() -> dict[str, Any]:
    return yaml.safe_load((Path(__file__).parent / "state_cases_v1.yaml").read_text())


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _until(end: datetime) -> dict[str, Any]:
    """``{month}`` and ``{year}`` of a plan template for a plan that ends at ``end``."""
    return {"month": _MONTHS[end.month - 1], "year": end.year}


class StateCaseSource:
    """``case(seed, i)``: one case per family drawn uniformly; ``batches`` writes it for a user."""

    def __init__(self, synthetic: SyntheticConfig | None = None) -> None:
        self.synthetic = SyntheticSource(synthetic or SyntheticConfig(max_distractors=2))
        self._makers: dict[str, Callable[[random.Random], Case]] = {
            "disputed-constraint": self._disputed_constraint, "expired-plan": self._expired_plan,
            "outside-evidence": self._outside_evidence, "retracted": self._retracted, "written": self.synthetic.case}

    def case(self, seed: int, i: int) -> tuple[str, Case]:
        rng = random.Random(f"state:{seed}:{i}")
        family = rng.choice(STATE_FAMILIES)
        case = self._makers[family](rng)
        if family != "written":
            self._distract(rng, case)
        return family, case

    # --- families -------------------------------------------------------------------------------------
    def _disputed_constraint(self, rng: random.Random) -> Case:
        t = templates()
        what = rng.choice(("allergy", "injury"))
        item = rng.choice(t["allergies" if what == "allergy" else "injuries"])
        kw = {**item, **({"Ing": _cap(item["ing"])} if what == "injury" else {})}
        said = rng.randint(120, 400)
        specs = [FactSpec(key="constraint", statement=rng.choice(t["constraint_templates"][what]).format(**kw),
                          kind="constraint", days=said),
                 FactSpec(key="lifted", statement=rng.choice(t["experience_templates"][what]).format(**kw),
                          kind="experience", days=rng.randint(3, said - 1))]
        rels = [("CONFLICTS_WITH", "lifted", "constraint")]
        if rng.random() < 0.7:
            specs.append(FactSpec(key="lifted2", statement=rng.choice(t["experience_templates"][f"{what}_repeat"])
                                  .format(**kw), kind="experience", days=rng.randint(1, 30)))
            rels.append(("CONFLICTS_WITH", "lifted2", "constraint"))
        ans = t["answers"][what]
        return Case(category="constraint", request=rng.choice(t["requests"][what]).format(**kw),
                    correct=ans["right"].format(**kw), wrong=[ans["wrong"].format(**kw)], specs=specs,
                    relations=rels, meta={"state_family": "disputed-constraint", "about": what})

    def _expired_plan(self, rng: random.Random) -> Case:
        t = templates()
        home, away = rng.sample(t["cities"], 2)
        place = rng.choice(t["places"])
        planned, ended = rng.randint(200, 500), rng.randint(30, 150)
        end = EPOCH - timedelta(days=ended)
        plan = rng.choice(t["plan_templates"]).format(city=away, **_until(end))
        specs = [FactSpec(key="plan", statement=plan, kind="plan", days=planned, valid_days=ended),
                 FactSpec(key="home", statement=rng.choice(t["home_templates"]).format(city=home), kind="circumstance",
                          days=rng.randint(3, 600))]
        if rng.random() < 0.7:
            specs.append(FactSpec(key="plan2", kind="plan", days=rng.randint(ended + 1, planned), valid_days=ended,
                                  statement=rng.choice(t["plan_repeat"]).format(city=away, **_until(end))))
        ans = t["place_answers"]
        return Case(category="update", request=rng.choice(t["place_requests"]).format(place=place),
                    correct=ans["right"].format(place=place, city=home), wrong=[ans["wrong"].format(place=place, city=away)],
                    specs=specs, meta={"state_family": "expired-plan"})

    def _outside_evidence(self, rng: random.Random) -> Case:
        t = templates()
        myth = rng.choice([m for m in synthetic_templates()["myths"] if "Great Wall" not in m["myth"]])
        ev = rng.choice(t["evidence_templates"])
        src = rng.choice(t["sources"])
        specs = [FactSpec(key="belief", statement=rng.choice(t["belief_templates"]).format(myth=myth["myth"]),
                          kind="belief", days=rng.randint(10, 300)),
                 FactSpec(key="evidence", statement=ev["text"].format(Src=_cap(f"a {src}"), src=src, truth=myth["truth"]),
                          kind=rng.choice(("belief", "event")), holder=ev["holder"], days=rng.randint(3, 300))]
        rels = [("CONFLICTS_WITH", "evidence", "belief")]
        if rng.random() < 0.7:
            specs.append(FactSpec(key="belief2", statement=rng.choice(t["belief_repeat"]).format(myth=myth["myth"]),
                                  kind="belief", days=rng.randint(1, 300)))
            rels.append(("CONFLICTS_WITH", "evidence", "belief2"))
        return Case(category="belief-vs-evidence", request=myth["question"], correct=myth["truth_answer"],
                    wrong=[myth["myth_answer"]], specs=specs, relations=rels, meta={"state_family": "outside-evidence"})

    def _retracted(self, rng: random.Random) -> Case:
        dname, dom = domain(rng)
        kept, taken_back, other = rng.sample(dom["items"], 3)
        said = rng.randint(5, 300)
        specs = [FactSpec(key="retracted", statement=fill(rng, "like", p=taken_back["phrase"]), days=said, retracted=True),
                 FactSpec(key="kept", statement=fill(rng, "like", p=kept["phrase"]), days=rng.randint(3, 400))]
        if rng.random() < 0.7:
            specs.append(FactSpec(key="retracted2", days=said, retracted=True,
                                  statement=fill(rng, "like", p=taken_back["phrase"])))
        return Case(category="update", request=rng.choice(dom["requests"]), correct=kept["answer"],
                    wrong=[taken_back["answer"], other["answer"]], specs=specs,
                    meta={"state_family": "retracted", "domain": dname})

    def _distract(self, rng: random.Random, case: Case) -> None:
        """One or two unrelated current preferences; sometimes an unrelated expired plan (a past state
        that is not the point of the request)."""
        syn = synthetic_templates()
        for n in range(rng.randint(1, 2)):
            _, dom = domain(rng)
            case.specs.append(FactSpec(key=f"distractor{n}", days=rng.randint(3, 400),
                                       statement=rng.choice(syn["templates"]["like"]).format(p=rng.choice(dom["items"])["phrase"])))
        if case.meta.get("state_family") != "expired-plan" and rng.random() < 0.3:
            ended = rng.randint(30, 150)
            plan = rng.choice(templates()["plan_templates"]).format(city=rng.choice(templates()["cities"]),
                                                                   **_until(EPOCH - timedelta(days=ended)))
            case.specs.append(FactSpec(key="old_plan", statement=plan, kind="plan", days=rng.randint(200, 500),
                                       valid_days=ended))


def case_batches(user: str, case: Case, now: datetime = EPOCH) -> list[EditBatch]:
    """The case as the store would receive it: one session per day its facts were said (oldest first),
    a turn per fact (the assistant's turn for what the assistant said), each edge in the session where
    its later end appears, and one last batch with the retractions."""
    days = sorted({s.days for s in case.specs}, reverse=True)
    ids = {s.key: f"{user}::f::{s.key}" for s in case.specs}
    day_of = {s.key: s.days for s in case.specs}
    batches: list[EditBatch] = []
    for n, d in enumerate(days):
        sid, at = f"{user}-s{n}", now - timedelta(days=d)
        specs = [s for s in case.specs if s.days == d]
        turns = [Turn(turn_id=f"{sid}:{k}", user_id=user, session_id=sid, seq=k, at=at,
                      role="assistant" if s.holder == "assistant" else "user", text=s.statement)
                 for k, s in enumerate(specs)]
        edits: list[OntologyEdit] = [AttachFact(concept_id=f"{user}::root", fact=Fact(
            fact_id=ids[s.key], user_id=user, statement=s.statement, kind=s.kind, holder=s.holder, scope=s.scope,
            source_turn_ids=(turns[k].turn_id,), session_id=sid, observed_at=at, valid_from=at,
            valid_to=s.valid_to(now))) for k, s in enumerate(specs)]
        for t, a, b in case.relations:
            if min(day_of[a], day_of[b]) == d:
                edits.append(Supersede(new_fact_id=ids[a], old_fact_id=ids[b]) if t == "SUPERSEDES"
                             else Conflict(a=ids[a], b=ids[b]))
        batches.append(EditBatch(user_id=user, session_id=sid, session_hash=sid, turns=turns, edits=edits))
    taken_back = [Retract(fact_id=ids[s.key], reason="the user took it back") for s in case.specs if s.retracted]
    if taken_back:
        batches.append(EditBatch(user_id=user, session_id=f"{user}-retract", session_hash=f"{user}-retract",
                                 edits=list(taken_back)))
    return batches
