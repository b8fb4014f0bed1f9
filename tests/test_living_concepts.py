"""Concepts in the commit path (induction/ontology.py): new facts find their induced concept or CREATE one,
converged siblings MERGE and heterogeneous concepts SPLIT, as ordinary logged edits that undo exactly on
both backends; names are readable (a hand-labelled set); the tree is shown by graph/concept_tree.py,
``evomem concepts`` (model-free), the profile and Cypher on PARENT_OF / CONTAINS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graph.concept_tree import live_tree, render_svg, render_text, tree_depth
from graph.edits import (AttachFact, CreateConcept, EditBatch, MergeConcepts, OntologyEdit, RenameConcept, SplitConcept,
                         apply_batch)
from graph.models import Fact
from graph.snapshot import Snapshot
from induction.config import IngestConfig, LivingConceptsConfig
from induction.naming import concept_name
from induction.offline import OfflineExtractor
from induction.ontology import INDUCED, anchor_of, living_edits
from induction.pipeline import Ingestor
from induction.session import Session
from memcore.memory import Memory

ROOT = Path(__file__).resolve().parents[1]
U = "maya"
ANCHOR = f"{U}::c::pets"
DOG = ["I walk my dog in the park every morning", "my dog chases the ball in the park", "the dog park was muddy today",
       "my dog loves the long park walks"]
CAT = ["my cat sleeps on the sofa all day", "the cat scratched the sofa again", "my cat naps on the sofa cushion",
       "the cat purrs on the sofa at night"]


def _vec(axis: int, wobble: int, dim: int = 16) -> tuple[float, ...]:
    v = np.zeros(dim, dtype=np.float32)
    v[axis] = 1.0
    v[(axis + 1 + wobble) % dim] = 0.15
    return tuple(float(x) for x in v / np.linalg.norm(v))


def _attach(fid: str, text: str, vec: tuple[float, ...], concept: str = ANCHOR) -> AttachFact:
    return AttachFact(fact=Fact(fact_id=f"{U}::f::{fid}", user_id=U, statement=text), concept_id=concept, embedding=vec)


CFG = LivingConceptsConfig(min_cluster=3, radius=0.6, assign_sim=0.6, merge_sim=0.95, split_min=6, split_child_min=3)


def _commit(mem: Memory, edits: list[Any], sid: str) -> Snapshot:
    mem.apply(EditBatch(user_id=U, session_id=sid, edits=edits))
    return mem.store.load_snapshot(U)


def _tree_of(s: Snapshot) -> tuple[Any, ...]:
    """Everything a concept edit can touch, as stored."""
    return (s.concepts, s.parent, s.fact_concept, s.facts, s.relations)


# ---------------------------------------------------------------- planning (pure)
def test_new_facts_create_a_concept_per_cluster_and_later_ones_attach_to_it() -> None:
    snap = Snapshot(user_id=U)
    edits: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    edits += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG[:3])]
    edits += [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT[:3])]
    out = living_edits(snap, edits, {}, CFG)
    creates = [e for e in out if isinstance(e, CreateConcept) and INDUCED in e.concept_id]
    assert len(creates) == 2 and all(c.parent_id == ANCHOR and anchor_of(c.concept_id) == ANCHOR for c in creates)
    assert {c.name for c in creates} == {"dog and park", "cat and sofa"} or all(c.name for c in creates)
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=out))
    homes = {s1.fact_concept[f"{U}::f::d{i}"] for i in range(3)}
    assert len(homes) == 1 and INDUCED in homes.pop()
    # the next session: a dog fact joins the dog concept (no new CREATE), an unrelated fact stays on the topic
    stored = {f"{U}::f::d{i}": _vec(0, i) for i in range(3)} | {f"{U}::f::c{i}": _vec(5, i) for i in range(3)}
    nxt = living_edits(s1, [_attach("d3", DOG[3], _vec(0, 3)), _attach("x", "a parrot visited", _vec(10, 0))], stored, CFG)
    s2, _ = apply_batch(s1, EditBatch(user_id=U, edits=nxt))
    assert not [e for e in nxt if isinstance(e, CreateConcept)]
    assert s2.fact_concept[f"{U}::f::d3"] == s1.fact_concept[f"{U}::f::d0"]
    assert s2.fact_concept[f"{U}::f::x"] == ANCHOR
    assert set(s1.concepts) <= set(s2.concepts)  # ids stay


def test_converged_siblings_merge_and_a_heterogeneous_concept_splits() -> None:
    snap = Snapshot(user_id=U)
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG[:3])]
    base += [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT[:3])]
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=living_edits(snap, base, {}, CFG)))
    stored = {e.fact.fact_id: e.embedding for e in base if isinstance(e, AttachFact) and e.embedding}
    # with a low merge bar the two clusters have converged: the smaller folds into the larger
    merge_cfg = CFG.model_copy(update={"merge_sim": 0.0})
    out = living_edits(s1, [_attach("d3", DOG[3], _vec(0, 3))], stored, merge_cfg)
    merges = [e for e in out if isinstance(e, MergeConcepts)]
    assert len(merges) == 1 and out[-1] == merges[0]
    s2, _ = apply_batch(s1, EditBatch(user_id=U, edits=out))
    assert s2.concepts[merges[0].source_id].retired_at is not None
    # the merged concept now holds dogs and cats: the next session splits it in two, dogs apart from cats
    stored[f"{U}::f::d3"] = _vec(0, 3)
    out3 = living_edits(s2, [_attach("c3", CAT[3], _vec(5, 3))], stored, CFG)
    splits = [e for e in out3 if isinstance(e, SplitConcept)]
    assert len(splits) == 1 and splits[0].concept_id == merges[0].target_id
    groups = [set(ch.fact_ids) for ch in splits[0].children]
    assert {f"{U}::f::d{i}" for i in range(4)} in groups
    assert all(ch.concept_id.startswith(splits[0].concept_id + INDUCED) for ch in splits[0].children)
    assert sorted(ch.name for ch in splits[0].children) == ["cat and sofa", "dog and park"]


# ---------------------------------------------------------------- undo, both backends
def test_undo_of_a_merge_and_of_a_split_restores_the_snapshot_exactly(mem: Memory) -> None:
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG[:3])]
    base += [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT[:3])]
    s = _commit(mem, living_edits(Snapshot(user_id=U), base, {}, CFG), "s1")
    assert len([c for c in s.concepts if INDUCED in c]) == 2
    # MERGE, planned from the store's own vectors, committed alone after its session's facts
    out = living_edits(s, [_attach("d3", DOG[3], _vec(0, 3))], mem.store.embeddings(U),
                       CFG.model_copy(update={"merge_sim": 0.0}))
    assert isinstance(out[-1], MergeConcepts)
    before = _commit(mem, out[:-1], "s2")
    after = _commit(mem, out[-1:], "s2-merge")
    assert _tree_of(after) != _tree_of(before)
    merge_id = max(after.edits.values(), key=lambda e: e.seq).edit_id
    mem.undo(U, merge_id)
    undone = mem.store.load_snapshot(U)
    assert _tree_of(undone) == _tree_of(before)
    # re-do the merge, then a SPLIT of the merged concept, and undo that
    redo = _commit(mem, out[-1:], "s2-merge-again")
    out3 = living_edits(redo, [_attach("c3", CAT[3], _vec(5, 3))], mem.store.embeddings(U), CFG)
    assert isinstance(out3[-1], SplitConcept)
    before = _commit(mem, out3[:-1], "s3")
    after = _commit(mem, out3[-1:], "s3-split")
    assert len(live_tree(after)[0].walk()) > len(live_tree(before)[0].walk())
    split_id = max(after.edits.values(), key=lambda e: e.seq).edit_id
    mem.undo(U, split_id)
    assert _tree_of(mem.store.load_snapshot(U)) == _tree_of(before)


def test_undo_of_a_rename_restores_the_name_exactly(mem: Memory) -> None:
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG[:3])]
    base += [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT[:3])]
    before = _commit(mem, living_edits(Snapshot(user_id=U), base, {}, CFG), "s1")
    dog = next(c for c in before.concepts if INDUCED in c and "dog" in before.concepts[c].name)
    after = _commit(mem, [RenameConcept(concept_id=dog, name="dog walks", description="4 facts about dog walks")], "s2")
    assert after.concepts[dog].name == "dog walks" and _tree_of(after) != _tree_of(before)
    logged = max(after.edits.values(), key=lambda e: e.seq)
    assert logged.op == "RENAME" and logged.payload["previous_name"] == before.concepts[dog].name
    mem.undo(U, logged.edit_id)
    assert _tree_of(mem.store.load_snapshot(U)) == _tree_of(before)


# ---------------------------------------------------------------- ingestion
def _sess(sid: str, texts: list[str], day: int) -> Session:
    return Session.model_validate({"session_id": sid, "user_id": U, "started_at": f"2025-08-{day:02d}T18:00:00Z",
                                   "turns": [{"role": "user", "text": t} for t in texts]})


def test_ingestion_places_every_fact_in_an_induced_tree_with_logged_edits(embedded_memory: Memory) -> None:
    mem = embedded_memory
    cfg = IngestConfig(adjudicator="rules", concepts=LivingConceptsConfig(min_cluster=3, radius=0.3, assign_sim=0.3,
                                                                           split_min=6, split_child_min=3))
    ing = Ingestor(mem, OfflineExtractor(), None, cfg)
    reps = [ing.ingest(_sess(f"s{k}", [f"{t} (week {k})." for t in DOG + CAT], 1 + k)) for k in range(3)]
    snap = mem.store.load_snapshot(U)
    assert all(snap.fact_concept.get(f) for f in snap.facts)  # facts never lose their concept
    tree = live_tree(snap)
    assert tree_depth(tree) >= 2
    induced = [c for c in snap.concepts if INDUCED in c]
    assert induced and sum(r.concepts_created for r in reps) >= len([c for c in induced if "/~" not in c.split(INDUCED, 1)[1]])
    logged = {e.op for e in snap.edits.values()}
    assert "CREATE" in logged
    # every concept id made in session 1 is still there after session 3 (live, or retired by a logged MERGE)
    first = {e.payload["concept_id"] for e in snap.edits.values() if e.op == "CREATE" and e.session_id == "s0"}
    assert first and first <= set(snap.concepts)


def test_living_concepts_off_keeps_the_extractors_topics(embedded_memory: Memory) -> None:
    ing = Ingestor(embedded_memory, OfflineExtractor(), None,
                   IngestConfig(adjudicator="rules", concepts=LivingConceptsConfig(enabled=False)))
    ing.ingest(_sess("s0", DOG + CAT, 1))
    snap = embedded_memory.store.load_snapshot(U)
    assert not [c for c in snap.concepts if INDUCED in c]


# ---------------------------------------------------------------- names (hand-labelled)
# (members, acceptable words in the name, words that must not appear); written by hand, not tuned on LoCoMo
NAMED: list[tuple[list[str], set[str], set[str]]] = [
    (["Melanie: I signed up for a pottery class yesterday", "Melanie: the pottery class made me so happy",
      "Melanie: I made a bowl in my pottery class"], {"pottery", "class", "bowl"}, {"melanie", "mel", "happy", "made"}),
    (["Caroline: I'm researching adoption agencies", "Caroline: the adoption agency called me back",
      "Caroline: adoption is a dream of mine"], {"adoption", "agency", "agencies"}, {"caroline", "mine", "dream"}),
    (["Jon: I lost my job as a banker", "Jon: the bank let me go last week", "Jon: my job at the bank was stressful"],
     {"job", "bank", "banker"}, {"jon", "lost", "let"}),
    (["we went camping at the beach", "the campfire at the beach was lovely", "camping by the beach with the kids"],
     {"camping", "beach", "campfire"}, {"lovely", "went", "we"}),
    (["Gina: I opened my own clothing store", "Gina: the store sells clothing I design", "Gina: my clothing store is busy"],
     {"clothing", "store"}, {"gina", "busy", "own"}),
    (["I started running marathons", "the marathon training is hard", "my marathon time improved"],
     {"marathon", "marathons", "running", "training"}, {"hard", "started", "improved"}),
]
CORPUS_EXTRA = ["I had coffee with a friend", "the weather was nice today", "I feel great about it", "we talked for hours",
                "my boss called me", "Caroline: thanks so much", "Melanie: that's awesome", "Jon: good luck"]


@pytest.mark.parametrize("members,good,bad", NAMED)
def test_names_are_noun_phrases_of_characteristic_terms(members: list[str], good: set[str], bad: set[str]) -> None:
    corpus = [t for m, _, _ in NAMED for t in m] + CORPUS_EXTRA
    name = concept_name(members, corpus, {"Melanie", "Caroline", "Jon", "Gina", "user"})
    words = set(name.replace(" and ", " ").split())
    assert words & good, name
    assert not words & bad, name


# ---------------------------------------------------------------- seeing the tree
@pytest.fixture
def grown(embedded_memory: Memory) -> Memory:
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG[:3])]
    base += [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT[:3])]
    embedded_memory.store.commit(apply_batch(Snapshot(user_id=U), EditBatch(
        user_id=U, session_id="s1", edits=living_edits(Snapshot(user_id=U), base, {}, CFG)))[1])
    return embedded_memory


def test_text_svg_and_cypher_show_the_live_tree(grown: Memory) -> None:
    snap = grown.store.load_snapshot(U)
    text = render_text(snap)
    assert "pets (6 facts)" in text and "latest concept edits" in text and "CREATE 'pets'" in text
    svg = render_svg(snap)
    assert svg.startswith("<svg") and svg.count("<circle") == 3 and "pets" in svg
    rows = grown.store.run_readonly_cypher(U, "MATCH (p:Concept)-[:PARENT_OF]->(c:Concept)-[:CONTAINS]->(f:Fact) "
                                              "RETURN p.name AS parent, c.name AS child, count(f) AS n ORDER BY child")
    induced = [n for t in live_tree(snap) for n in t.walk() if INDUCED in n.concept_id]
    assert sorted((r["parent"], r["child"], r["n"]) for r in rows) == sorted(("pets", n.name, n.facts) for n in induced)


def test_profile_shows_the_induced_concepts(grown: Memory) -> None:
    from memcore.profile import build_profile

    prof = build_profile(grown, U)
    paths = [tuple(g.path) for g in prof.concepts]
    assert any(len(p) == 3 and p[1] == "pets" for p in paths), paths


def test_concepts_command_prints_draws_and_loads_no_model(tmp_path: Path) -> None:
    from evomem.cli import main
    from graph.embedded import EmbeddedStore

    path = tmp_path / "store"
    store = EmbeddedStore(path)
    store.setup()
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i, 384)) for i, t in enumerate(DOG[:3])]
    base += [_attach(f"c{i}", t, _vec(5, i, 384)) for i, t in enumerate(CAT[:3])]
    store.commit(apply_batch(Snapshot(user_id=U), EditBatch(user_id=U, edits=living_edits(Snapshot(user_id=U), base, {}, CFG)))[1])
    store.close()
    svg = tmp_path / "tree.svg"
    probe = ("import json, sys\nfrom evomem.cli import main\nrc = main(sys.argv[1:])\n"
             "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
             "print('PROBE ' + json.dumps({'rc': rc, 'heavy': heavy}), flush=True)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    p = subprocess.run([sys.executable, "-c", probe, "concepts", "--store-path", str(path), "--user", U, "--svg", str(svg)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    got = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")).removeprefix("PROBE "))
    assert got == {"rc": 0, "heavy": []}, p.stderr[-2000:]
    assert "pets (6 facts" in p.stdout and "dog" in p.stdout and svg.read_text().startswith("<svg")
    assert main(["concepts", "--store-path", str(path), "--user", "nobody"]) == 2


def test_the_mcp_concept_resource_shows_the_induced_concepts(grown: Memory) -> None:
    from serving.service import build_concept_tree

    tree = build_concept_tree(grown.store.load_snapshot(U))
    assert tree.root is not None
    pets = next(n for n in tree.root.children if n.name == "pets")
    assert len(pets.children) == 2 and all(len(k.facts) == 3 and k.description for k in pets.children)


def test_the_halves_of_a_split_do_not_merge_back() -> None:
    snap = Snapshot(user_id=U)
    base: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="pets")]
    base += [_attach(f"d{i}", t, _vec(0, i)) for i, t in enumerate(DOG)] + [_attach(f"c{i}", t, _vec(5, i)) for i, t in enumerate(CAT)]
    cfg = CFG.model_copy(update={"min_cluster": 9})  # no CREATE: all eight stay on the topic, which then splits
    out = living_edits(snap, base, {}, cfg.model_copy(update={"split_min": 8}))
    assert isinstance(out[-1], SplitConcept) and out[-1].concept_id == ANCHOR
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=out))
    stored = {e.fact.fact_id: e.embedding for e in base if isinstance(e, AttachFact) and e.embedding}
    again = living_edits(s1, [], stored, cfg.model_copy(update={"merge_sim": 0.0}))
    assert not [e for e in again if isinstance(e, MergeConcepts)]
