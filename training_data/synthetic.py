"""Synthetic memory-use cases: preference update, constraint, scope, belief vs evidence, preference vs
evidence conflict, and plain preference use with misleading distractors (D.1 of the paper).

The paper's running example (a user who used to love hiking, switched to beach trips and now has a knee
injury) generalized over the domains, items and templates in ``synthetic_v1.yaml``. Every case has a
side the memory supports and a misleading side — a superseded preference, a preference a constraint
rules out, a preference from another scope, a belief contradicted by evidence, another person's taste —
and the misleading side is usually mentioned more often, so an answer model that weighs all memories
equally is pulled the wrong way. Distractors follow D.1: unrelated genuine preferences of the same
user, everyday facts, and same-scenario preferences of other people.

Deterministic: instance ``i`` of seed ``s`` is drawn from ``random.Random(f"synthetic:{s}:{i}")``, so a
build never depends on iteration order or on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from training_data.base import CATEGORIES, Category, FactSpec, GoldUse, TrainingInstance, assemble, shuffled_choices

SYNTHETIC_CATEGORIES: tuple[str, ...] = ("update", "constraint", "scope", "belief-vs-evidence", "conflict",
                                         "preference-use")
USE_HIGH_PREF = GoldUse(use=True, role="current-preference", priority="high")
IGNORE_HIST = GoldUse(use=False, role="historical", priority="low")
IGNORE_IRRELEVANT = GoldUse(use=False, role="irrelevant", priority="low")
IGNORE_PREF = GoldUse(use=False, role="current-preference", priority="low")


@cache
def templates() -> dict[str, Any]:
    return yaml.safe_load((Path(__file__).parent / "synthetic_v1.yaml").read_text())


class SyntheticConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(default=1000, ge=1, description="Number of instances.")
    categories: list[str] = Field(default_factory=lambda: list(SYNTHETIC_CATEGORIES),
                                  description="Which case families to draw from (uniformly).")
    repeat_misleading: float = Field(default=0.8, ge=0, le=1,
                                     description="Probability that the misleading side is mentioned twice.")
    unlinked_update: float = Field(default=0.3, ge=0, le=1,
                                   description="Share of update/conflict cases whose SUPERSEDES/CONFLICTS_WITH edge "
                                               "extraction missed (both facts look current).")
    max_distractors: int = Field(default=2, ge=0, le=4, description="Unrelated genuine preferences per instance (0..max).")
    other_person: float = Field(default=0.3, ge=0, le=1,
                                description="Probability of a same-scenario preference of another person.")
    min_facts: int = Field(default=0, ge=0, le=8, description="Pad with unrelated genuine preferences up to this "
                           "many facts: with a fixed count and a shuffled order every position is equally likely "
                           "to hold the fact that matters.")
    order: Literal["retrieval", "shuffled"] = Field(
        default="retrieval", description="Fact order: as retrieval renders it (groups, each in time order: an "
        "update follows what it replaced), or fully shuffled so position carries no hint.")

    @field_validator("categories")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if c not in SYNTHETIC_CATEGORIES]
        if bad or not v:
            raise ValueError(f"unknown synthetic categories {bad}; choose from {SYNTHETIC_CATEGORIES}")
        return v


class Case(BaseModel):
    """A case before assembly: its facts, their relations, the request and its options."""

    category: Category
    request: str
    correct: str
    wrong: list[str]
    specs: list[FactSpec]
    relations: list[tuple[str, str, str]] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


def fill(rng: random.Random, kind: str, **kw: str) -> str:
    """One template of ``kind`` (synthetic_v1.yaml), drawn with ``rng`` and filled in."""
    return rng.choice(templates()["templates"][kind]).format(**kw)


def domain(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A domain (name, its items, requests and constraints), drawn with ``rng``."""
    name = rng.choice(sorted(templates()["domains"]))
    return name, templates()["domains"][name]


def _old(rng: random.Random) -> int:
    return rng.randint(150, 400)


def _new(rng: random.Random) -> int:
    return rng.randint(3, 60)


class SyntheticSource:
    """Instances from the synthetic templates; ``config.n`` of them, deterministic per seed."""

    name = "synthetic"

    def __init__(self, config: SyntheticConfig | None = None):
        self.config = config or SyntheticConfig()
        self._makers: dict[str, Callable[[random.Random], Case]] = {
            "update": self._update, "constraint": self._constraint, "scope": self._scope,
            "belief-vs-evidence": self._belief, "conflict": self._conflict, "preference-use": self._pref_use}

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        for i in range(self.config.n):
            yield self.make(seed, i)

    def case(self, rng: random.Random) -> Case:
        """One case (specs, relations, request, options) drawn with ``rng``, distractors included."""
        case = self._makers[rng.choice(self.config.categories)](rng)
        self._add_distractors(rng, case)
        return case

    def make(self, seed: int, i: int) -> TrainingInstance:
        rng = random.Random(f"synthetic:{seed}:{i}")
        case = self.case(rng)
        key = f"syn{seed}-{i:06d}"
        user = f"synth-user-{rng.randint(0, 999):03d}"
        items, gold, _ = assemble(key, user, case.specs, case.relations, rng,  # type: ignore[arg-type]
                                  order=self.config.order)
        assert case.category in CATEGORIES
        return TrainingInstance(instance_id=f"synthetic:{seed}:{i}", source=self.name, category=case.category,
                                user_id=user, request=case.request, evidence=items, reference_answer=case.correct,
                                choices=shuffled_choices(case.correct, case.wrong, rng), scorer="choice", gold=gold,
                                metadata={"template_version": templates()["version"], **case.meta})

    # --- case families -------------------------------------------------------------------------------
    def _misleading_twice(self, rng: random.Random) -> bool:
        return rng.random() < self.config.repeat_misleading

    def _update(self, rng: random.Random) -> Case:
        dname, dom = domain(rng)
        old, new, other = rng.sample(dom["items"], 3)
        t_old = _old(rng)
        specs = [FactSpec(key="old", statement=fill(rng, "like", p=old["phrase"]), days=t_old, gold=IGNORE_HIST),
                 FactSpec(key="new", statement=fill(rng, "update", p=new["phrase"]), days=_new(rng), gold=USE_HIGH_PREF)]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="old_hist", statement=fill(rng, "history", p=old["phrase"]), kind="experience",
                                  days=t_old + rng.randint(1, 60), gold=IGNORE_HIST))
        linked = rng.random() >= self.config.unlinked_update
        rels = [("SUPERSEDES", "new", "old")] if linked else []
        return Case(category="update", request=rng.choice(dom["requests"]), correct=new["answer"],
                     wrong=[old["answer"], other["answer"]], specs=specs, relations=rels,
                     meta={"domain": dname, "linked": linked})

    def _constraint(self, rng: random.Random) -> Case:
        dname, dom = domain(rng)
        liked, ok, other = rng.sample(dom["items"], 3)
        specs = [FactSpec(key="liked", statement=fill(rng, "like", p=liked["phrase"]), days=_old(rng), gold=IGNORE_PREF),
                 FactSpec(key="constraint", statement=rng.choice(dom["constraints"]).format(p=ok["phrase"]),
                          kind="constraint", days=_new(rng),
                          gold=GoldUse(use=True, role="constraint", priority="high"))]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="liked_hist", statement=fill(rng, "history", p=liked["phrase"]),
                                  kind="experience", days=_old(rng), gold=IGNORE_HIST))
        return Case(category="constraint", request=rng.choice(dom["requests"]), correct=ok["answer"],
                     wrong=[liked["answer"], other["answer"]], specs=specs, meta={"domain": dname})

    def _scope(self, rng: random.Random) -> Case:
        dname, dom = domain(rng)
        here_item, there_item, other = rng.sample(dom["items"], 3)
        pair = list(rng.choice(templates()["scopes"]))
        rng.shuffle(pair)
        here, there = pair
        specs = [FactSpec(key="here", statement=fill(rng, "scoped", S=here["scope"].capitalize(), p=here_item["phrase"]),
                          scope=here["scope"], days=rng.randint(3, 300), gold=USE_HIGH_PREF),
                 FactSpec(key="there", statement=fill(rng, "scoped", S=there["scope"].capitalize(), p=there_item["phrase"]),
                          scope=there["scope"], days=rng.randint(3, 300), gold=IGNORE_IRRELEVANT)]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="there2", statement=fill(rng, "history", p=there_item["phrase"]), kind="experience",
                                  scope=there["scope"], days=_old(rng), gold=IGNORE_IRRELEVANT))
        return Case(category="scope", request=f"{here['say']} {rng.choice(dom['requests'])}", correct=here_item["answer"],
                     wrong=[there_item["answer"], other["answer"]], specs=specs,
                     meta={"domain": dname, "scope": here["scope"]})

    def _belief(self, rng: random.Random) -> Case:
        t = templates()
        m = rng.choice(t["myths"])
        specs = [FactSpec(key="belief", statement=fill(rng, "belief", claim=m["myth"], job=rng.choice(t["jobs"])),
                          kind="belief", days=rng.randint(10, 300), gold=IGNORE_IRRELEVANT),
                 FactSpec(key="evidence", statement=fill(rng, "evidence", claim=m["truth"], src=rng.choice(t["sources"])),
                          kind="event", days=rng.randint(3, 300), gold=GoldUse(use=True, role="evidence", priority="high"))]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="belief2", statement=fill(rng, "belief_repeat", claim=m["myth"]), kind="belief",
                                  days=rng.randint(10, 300), gold=IGNORE_IRRELEVANT))
        specs.append(FactSpec(key="everyday", statement=rng.choice(t["templates"]["everyday"]), kind="circumstance",
                              days=rng.randint(3, 400), gold=IGNORE_IRRELEVANT))
        linked = rng.random() >= self.config.unlinked_update
        rels = [("CONFLICTS_WITH", "evidence", "belief")] if linked else []
        return Case(category="belief-vs-evidence", request=m["question"], correct=m["truth_answer"],
                     wrong=[m["myth_answer"]], specs=specs, relations=rels, meta={"myth": m["myth"], "linked": linked})

    def _conflict(self, rng: random.Random) -> Case:
        tool = rng.choice(templates()["tools"])
        fav, best, other = rng.sample(tool["options"], 3)
        specs = [FactSpec(key="pref", statement=fill(rng, "tool_pref", a=fav, cat=tool["cat"]), days=_old(rng),
                          gold=IGNORE_PREF),
                 # Evidence may predate the preference: a conflict has no time order (an update does), so
                 # "the newer fact wins" must not solve this family.
                 FactSpec(key="evidence", statement=fill(rng, "tool_evidence", b=best, req=tool["req"]), kind="event",
                          days=rng.randint(3, 400), gold=GoldUse(use=True, role="evidence", priority="high"))]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="pref2", statement=fill(rng, "tool_repeat", a=fav), kind="experience",
                                  days=_new(rng), gold=IGNORE_PREF))
        linked = rng.random() >= self.config.unlinked_update
        rels = [("CONFLICTS_WITH", "evidence", "pref")] if linked else []
        return Case(category="conflict", request=f"Which of the {tool['cat']} should I choose for {tool['req']}?",
                     correct=best, wrong=[fav, other], specs=specs, relations=rels,
                     meta={"tool_category": tool["cat"], "linked": linked})

    def _pref_use(self, rng: random.Random) -> Case:
        dname, dom = domain(rng)
        mine, theirs, other = rng.sample(dom["items"], 3)
        person = rng.choice(templates()["people"])
        specs = [FactSpec(key="mine", statement=fill(rng, "like", p=mine["phrase"]), days=rng.randint(3, 300),
                          gold=USE_HIGH_PREF),
                 FactSpec(key="theirs", statement=fill(rng, "other_like", rel=person["rel"], name=person["name"],
                                                        p=theirs["phrase"]),
                          holder=person["name"], days=rng.randint(3, 300), gold=IGNORE_IRRELEVANT)]
        if self._misleading_twice(rng):
            specs.append(FactSpec(key="theirs2", statement=fill(rng, "other_repeat", name=person["name"],
                                                                 pron=person["pron"], p=theirs["phrase"]),
                                  holder=person["name"], days=rng.randint(3, 300), gold=IGNORE_IRRELEVANT))
        return Case(category="preference-use", request=rng.choice(dom["requests"]), correct=mine["answer"],
                     wrong=[theirs["answer"], other["answer"]], specs=specs, meta={"domain": dname})

    # --- distractors (D.1) ----------------------------------------------------------------------------
    def _add_distractors(self, rng: random.Random, case: Case) -> None:
        domain = case.meta.get("domain")
        others = [d for d in sorted(templates()["domains"]) if d != domain]

        def unrelated(n: int) -> FactSpec:
            item = rng.choice(templates()["domains"][rng.choice(others)]["items"])
            return FactSpec(key=f"distractor{n}", statement=fill(rng, "like", p=item["phrase"]),
                            days=rng.randint(3, 400), gold=IGNORE_IRRELEVANT)

        n_extra = rng.randint(0, self.config.max_distractors)
        for n in range(n_extra):
            case.specs.append(unrelated(n))
        if domain and case.category != "preference-use" and rng.random() < self.config.other_person:
            # Same scenario, different person: supports one of the wrong options.
            person = rng.choice(templates()["people"])
            target = next(i for i in templates()["domains"][domain]["items"] if i["answer"] == case.wrong[-1])
            case.specs.append(FactSpec(key="other_person", holder=person["name"], days=rng.randint(3, 300),
                                       statement=fill(rng, "other_like", rel=person["rel"], name=person["name"],
                                                       p=target["phrase"]), gold=IGNORE_IRRELEVANT))
        while len(case.specs) < self.config.min_facts:
            n_extra += 1
            case.specs.append(unrelated(n_extra))
