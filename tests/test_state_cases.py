"""State cases (training_data/state_cases.py): synthetic memories written as edits through a real store
give the relational states they are for, deterministically; and the warm-start targets take one side of
a relation group as a whole (policy/targets.py)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from policy.reader import AnswerReader
from policy.rewards import BaselineCache, ReaderAnswerModel
from policy.state import parse_state
from training_data.base import EPOCH, FactSpec, TrainingInstance, assemble
from training_data.state_cases import STATE_FAMILIES, StateCaseSource, case_batches

V2 = ReaderAnswerModel(AnswerReader(ignored_weight=1.0))


def test_cases_are_deterministic_and_cover_every_family() -> None:
    src = StateCaseSource()
    assert src.case(0, 7) == src.case(0, 7) and src.case(0, 7) != src.case(1, 7)
    families = Counter(src.case(0, i)[0] for i in range(60))
    assert set(families) == set(STATE_FAMILIES)
    for i in range(60):  # a real choice: the misleading side is an option too, and not the answer
        _, c = src.case(0, i)
        assert c.wrong and c.correct not in c.wrong


def test_batches_are_one_session_per_day_edges_with_their_later_end_retractions_last() -> None:
    src = StateCaseSource()
    fam, case = next(x for x in (src.case(0, i) for i in range(200)) if x[0] == "disputed-constraint")
    batches = case_batches("u1", case)
    days = sorted({s.days for s in case.specs}, reverse=True)
    assert len(batches) == len(days) and [b.session_id for b in batches] == [f"u1-s{n}" for n in range(len(days))]
    seen: set[str] = set()
    for b in batches:  # an edge arrives with (or after) both of its facts
        seen |= {e.fact.fact_id for e in b.edits if e.op == "ATTACH"}
        assert all({e.a, e.b} <= seen for e in b.edits if e.op == "CONFLICT")
    fam, case = next(x for x in (src.case(0, i) for i in range(200)) if x[0] == "retracted")
    assert case_batches("u2", case)[-1].session_id == "u2-retract"


def test_build_writes_the_states_each_family_is_for(tmp_path: Path) -> None:
    from llmclients.embeddings import EmbedderConfig
    from policy.train import read_instances
    from training_data.retrieved import RetrievedBuildConfig, build_retrieved

    cfg = RetrievedBuildConfig(state_n=25, embedder=EmbedderConfig(kind="hash", dim=64), k=8)
    m = build_retrieved(tmp_path / "a", cfg)
    assert not m["ingest_errors"] and m["hash"] == build_retrieved(tmp_path / "b", cfg)["hash"]
    insts = read_instances(tmp_path / "a" / "train.jsonl")
    assert len(insts) == 25 and not (tmp_path / "a" / "heldout.jsonl").read_text()  # training rows only
    want = {"state-disputed-constraint": ("constraint", "disputed"), "state-expired-plan": ("plan", "expired"),
            "state-retracted": ("preference", "retracted"), "state-outside-evidence": ("belief", "disputed")}
    found: set[str] = set()
    for inst in insts:
        fam = inst.metadata["family"]
        if fam in want:
            kinds = {(it.fact.kind, it.state.validity) for it in inst.evidence}
            assert want[fam] in kinds, (fam, kinds)
            found.add(fam)
        if fam == "state-outside-evidence":  # the evidence is held by whoever reported it, not the user
            assert any(it.fact.holder in ("assistant", "document") and it.state.validity == "disputed"
                       for it in inst.evidence)
    assert found == set(want)


def _conflict_instance() -> TrainingInstance:
    specs = [FactSpec(key="allergy", statement="Has a sesame allergy", kind="constraint", days=200),
             FactSpec(key="ok1", statement="Had sesame bagels last week and felt fine", kind="experience", days=20),
             FactSpec(key="ok2", statement="Had sesame bagels again with no problems", kind="experience", days=5)]
    items, _, a = assemble("t", "u", specs, [("CONFLICTS_WITH", "ok1", "allergy"), ("CONFLICTS_WITH", "ok2", "allergy")],
                           random.Random(0))
    return TrainingInstance(instance_id="t:c", source="test", category="constraint", user_id="u",
                            request="Can I have a tahini dip?", evidence=items,
                            reference_answer="No, better not: the sesame allergy has not been ruled out",
                            choices=("Yes, go ahead: sesame bagels went fine",
                                     "No, better not: the sesame allergy has not been ruled out"), scorer="choice",
                            metadata={"aliases": a})


def test_target_takes_one_side_of_a_conflict_group_whole() -> None:
    from policy.targets import relation_groups, target_state

    inst = _conflict_instance()
    a = inst.metadata["aliases"]
    assert len(set(relation_groups(inst).values())) == 1
    text, r = target_state(inst, V2, BaselineCache(), style="described")
    st = {f.alias: f for f in parse_state(text, inst.aliases).facts}
    assert r == 1.0 and st[a["allergy"]].use and st[a["allergy"]].role == "constraint"
    # both mentions of the misleading side are set aside, not just the one a single flip would catch
    assert not st[a["ok1"]].use and not st[a["ok2"]].use


@pytest.mark.parametrize("spec, validity", [
    (FactSpec(key="p", statement="Plans to move to Oslo in May 2024", kind="plan", days=300, valid_days=100), "expired"),
    (FactSpec(key="p", statement="Plans to move to Oslo in May 2025", kind="plan", days=300, valid_days=None), "current"),
    (FactSpec(key="p", statement="The user loves jazz.", days=30, retracted=True), "retracted"),
])
def test_fact_spec_validity_window_and_retraction(spec: FactSpec, validity: str) -> None:
    items, _, _ = assemble("t", "u", [spec], [], random.Random(0), now=EPOCH)
    assert items[0].state.validity == validity


class _AnySetAside:
    """A fake answer model for the tie logic only: right whenever the state sets any fact aside, so every
    one-side-of-the-group correction ties and only the order of the candidates decides."""

    name = "fake-any-set-aside"

    def answer(self, instance: TrainingInstance, state: object) -> str | None:
        from policy.state import ReasoningState

        if isinstance(state, ReasoningState) and any(not f.use for f in state.facts):
            return instance.reference_answer
        return instance.choices[0]


@pytest.mark.parametrize("evidence_first, kept", [(False, "task"), (True, "doc")])
def test_evidence_first_never_picks_a_target_that_sets_the_outside_report_aside(evidence_first: bool, kept: str) -> None:
    from policy.targets import sets_aside_evidence, target_state

    specs = [FactSpec(key="task", statement="Is choosing a cloud backup service for a photo archive", kind="circumstance", days=10),
             FactSpec(key="doc", statement="RelaySafe restored previews more reliably than Northstar in two trials",
                      kind="belief", holder="document", days=9),
             FactSpec(key="soft", statement="Keeps coming back to Northstar Backup", kind="belief", days=8)]
    items, _, a = assemble("t", "u", specs, [("CONFLICTS_WITH", "doc", "task"), ("CONFLICTS_WITH", "soft", "doc")],
                           random.Random(0))
    inst = TrainingInstance(instance_id="t:e", source="test", category="belief-vs-evidence", user_id="u",
                            request="Which backup service should I adopt?", evidence=items, reference_answer="RelaySafe",
                            choices=("Northstar Backup", "RelaySafe"), scorer="choice")
    text, r = target_state(inst, _AnySetAside(), BaselineCache(), style="described", evidence_first=evidence_first)
    used = {f.alias for f in parse_state(text, inst.aliases).facts if f.use}
    assert r == 1.0 and used == {a[kept]}  # the earlier alias (the user's task line) wins the tie unless flagged
    assert sets_aside_evidence(text, inst) is not evidence_first
