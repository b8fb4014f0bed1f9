"""MemSyco-Bench dev rows, FEVER / SciFact / PersonaMem adapters (tiny fixtures written here), build-data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from training_data.build import BuildConfig, build_data
from training_data.factcheck import FeverSource, SciFactSource
from training_data.memsyco import MemSycoSource
from training_data.personamem import PersonaMemSource
from training_data.synthetic import SyntheticConfig


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- MemSyco ---------------------------------------------------------------------------------------------

def test_memsyco_rows_become_instances_with_states_and_no_answer_leak(bench_data: Path) -> None:
    insts = list(MemSycoSource(bench_data / "memsyco-bench", limit_per_task=20).instances(0))
    assert len(insts) == 100
    by_task: dict[str, list] = {}
    for i in insts:
        by_task.setdefault(i.metadata["task"], []).append(i)
        rendered = i.request + " ".join(it.fact.statement for it in i.evidence)
        assert i.metadata["reference_long"] not in rendered, "the reference answer must never be in the input"
    for i in by_task["valid_memory_selection"]:  # update: the outdated item is superseded by the current one
        states = {it.state.validity for it in i.evidence if not it.fact.fact_id.split("::")[-1].startswith("d")}
        assert states == {"superseded", "current"}
        old = [a for a, g in i.gold.items() if g.role == "historical"]
        assert len(old) == 1
    for i in by_task["memory_evidence_conflict"]:
        assert i.scorer == "choice" and i.reference_answer in i.choices and len(i.choices) == 2
        assert any(it.state.validity == "disputed" for it in i.evidence)
    for i in by_task["objective_fact_judgment"]:
        assert i.scorer == "choice" and all(it.fact.kind != "preference" or "d" in it.fact.fact_id for it in i.evidence)
    assert all(i.scorer == "judge" for i in by_task["personalized_memory_use"])
    # D.1 distractors: other rows' memories on another topic
    assert all(any(g.role == "irrelevant" and not g.use for g in i.gold.values()) for i in by_task["valid_memory_selection"])


def test_memsyco_is_deterministic(bench_data: Path) -> None:
    a = [i.model_dump_json() for i in MemSycoSource(limit_per_task=5).instances(1)]  # the default root
    b = [i.model_dump_json() for i in MemSycoSource(bench_data / "memsyco-bench", limit_per_task=5).instances(1)]
    assert a == b


def test_memsyco_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="MemSyco-Bench root"):
        list(MemSycoSource(tmp_path).instances(0))


# --- FEVER / SciFact ----------------------------------------------------------------------------------------

def test_fever_adapter_resolves_evidence_and_skips_unresolvable(tmp_path: Path) -> None:
    claims = _jsonl(tmp_path / "train.jsonl", [
        {"id": 1, "verifiable": "VERIFIABLE", "label": "SUPPORTS", "claim": "Paris is the capital of France.",
         "evidence": [[[10, 20, "Paris", 0]]]},
        {"id": 2, "verifiable": "VERIFIABLE", "label": "REFUTES", "claim": "The Moon is made of cheese.",
         "evidence": [[[11, 21, "Moon", 1]]]},
        {"id": 3, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO", "claim": "X.", "evidence": [[[1, None, None, None]]]},
        {"id": 4, "verifiable": "VERIFIABLE", "label": "SUPPORTS", "claim": "Missing page.", "evidence": [[[12, 22, "Nope", 0]]]},
    ])
    wiki = tmp_path / "wiki-pages"
    wiki.mkdir()
    _jsonl(wiki / "wiki-001.jsonl", [
        {"id": "Paris", "text": "", "lines": "0\tParis is the capital and largest city of France .\tFrance"},
        {"id": "Moon", "text": "", "lines": "0\tThe Moon orbits Earth .\n1\tThe Moon is made of rock and dust ."},
    ])
    src = FeverSource(claims, wiki)
    insts = list(src.instances(0))
    assert [i.instance_id for i in insts] == ["fever:1", "fever:2"]
    assert src.skipped == 1  # id 4; NEI rows are filtered before
    paris, moon = insts
    assert paris.reference_answer == "True" and moon.reference_answer == "False"
    assert set(paris.choices) == {"True", "False"} and paris.category == "belief-vs-evidence"
    ev = next(it for it in moon.evidence if it.fact.kind == "event")
    belief = next(it for it in moon.evidence if it.fact.kind == "belief")
    assert "rock and dust" in ev.fact.statement and "the moon is made of cheese" in belief.fact.statement.lower()
    assert ev.state.validity == belief.state.validity == "disputed"
    assert moon.gold[ev.alias].use and not moon.gold[belief.alias].use
    assert any(it.fact.kind == "circumstance" for it in moon.evidence)  # everyday distractor (D.1)


def test_scifact_adapter(tmp_path: Path) -> None:
    corpus = _jsonl(tmp_path / "corpus.jsonl", [
        {"doc_id": 7, "title": "Vitamin D trial", "abstract": ["We ran a trial.", "Vitamin D did not reduce fractures."],
         "structured": False}])
    claims = _jsonl(tmp_path / "claims_train.jsonl", [
        {"id": 5, "claim": "Vitamin D reduces fractures.", "evidence": {"7": [{"sentences": [1], "label": "CONTRADICT"}]},
         "cited_doc_ids": [7]},
        {"id": 6, "claim": "Unrelated.", "evidence": {}, "cited_doc_ids": [7]}])
    src = SciFactSource(claims, corpus)
    insts = list(src.instances(0))
    assert len(insts) == 1 and src.skipped == 1
    i = insts[0]
    assert i.reference_answer == "False" and i.source == "scifact"
    assert any("did not reduce fractures" in it.fact.statement for it in i.evidence)


# --- PersonaMem ---------------------------------------------------------------------------------------------

def test_personamem_adapter_uses_only_the_past_and_maps_types(tmp_path: Path) -> None:
    ctx = [{"role": "system", "content": "persona"},
           {"role": "user", "content": "I used to love spicy food, especially curry."},
           {"role": "assistant", "content": "Noted."},
           {"role": "user", "content": "My garden tomatoes are growing well."},
           {"role": "user", "content": "Lately spicy food upsets my stomach, I prefer mild food now."},
           {"role": "user", "content": "FUTURE: I now hate all food recommendations."}]
    contexts = _jsonl(tmp_path / "shared_contexts_32k.jsonl", [{"ctx1": ctx}])
    qpath = tmp_path / "questions_32k.csv"
    cols = ["persona_id", "question_id", "question_type", "topic", "user_question_or_message", "correct_answer",
            "all_options", "shared_context_id", "end_index_in_shared_context"]
    with qpath.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerow({"persona_id": "0", "question_id": "q1", "question_type": "track_full_preference_evolution",
                    "topic": "food", "user_question_or_message": "Any spicy food suggestions for dinner?",
                    "correct_answer": "(b)", "all_options": str(["(a) A fiery curry.", "(b) A mild risotto."]),
                    "shared_context_id": "ctx1", "end_index_in_shared_context": "5"})
    insts = list(PersonaMemSource(qpath, contexts).instances(0))
    assert len(insts) == 1
    i = insts[0]
    assert i.category == "update" and i.reference_answer == "A mild risotto." and i.choices == ("A fiery curry.", "A mild risotto.")
    text = " ".join(it.fact.statement for it in i.evidence)
    assert "FUTURE" not in text, "messages after end_index must not leak"
    assert "spicy food upsets" in text and "garden tomatoes" in text  # related + an unrelated distractor
    older = next(it for it in i.evidence if "used to love" in it.fact.statement)
    newer = next(it for it in i.evidence if "upsets" in it.fact.statement)
    assert older.fact.observed_at < newer.fact.observed_at


# --- build-data ---------------------------------------------------------------------------------------------

def test_build_data_manifest_is_reproducible(tmp_path: Path) -> None:
    cfg = BuildConfig(seed=3, synthetic=SyntheticConfig(n=60), heldout_fraction=0.2)
    m1 = build_data(tmp_path / "a", cfg)
    m2 = build_data(tmp_path / "b", cfg)
    m3 = build_data(tmp_path / "c", cfg.model_copy(update={"seed": 4}))
    assert m1["hash"] == m2["hash"] != m3["hash"]
    assert (tmp_path / "a" / "train.jsonl").read_bytes() == (tmp_path / "b" / "train.jsonl").read_bytes()
    assert m1["total"] == 60 and sum(m1["counts"]["split"].values()) == 60
    assert 0 < m1["counts"]["split"]["heldout"] < 30
    assert sum(m1["counts"]["category"].values()) == 60 and m1["counts"]["source"] == {"synthetic": 60}
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["hash"] == m1["hash"] and manifest["seed"] == 3


def test_build_data_with_memsyco_and_fever(tmp_path: Path, bench_data: Path) -> None:
    claims = _jsonl(tmp_path / "f.jsonl", [{"id": 1, "label": "SUPPORTS", "claim": "A is B.", "evidence": [[[1, 2, "A", 0]]]}])
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    _jsonl(wiki / "w.jsonl", [{"id": "A", "lines": "0\tA is indeed B ."}])
    cfg = BuildConfig(synthetic=SyntheticConfig(n=5), fever_claims=str(claims), fever_wiki=str(wiki),
                      memsyco_root=str(bench_data / "memsyco-bench"))
    m = build_data(tmp_path / "out", cfg)
    assert m["counts"]["source"]["fever"] == 1 and m["skipped"]["fever"] == 0
    assert m["counts"]["source"]["memsyco"] == 904


def test_build_data_needs_paired_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="FEVER needs both"):
        build_data(tmp_path / "never", BuildConfig(fever_claims="x.jsonl"))
    assert not (tmp_path / "never").exists()
