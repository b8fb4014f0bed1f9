"""The relation model: features, the numpy classifier and its artefact, and the adjudicator where the
model proposes and graph.rules disposes (direction, holders, kinds). No sentence model is loaded here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graph.models import Fact
from graph.snapshot import Snapshot
from induction.config import RelationModelConfig
from induction.extract import CandidateFact
from induction.adjudication.model import ModelAdjudicator
from induction.relations.features import (LABELS, STRUCT_NAMES, FactView, PairContext, pair_features, turn_overlap,
                                          turn_ranks)
from induction.relations.model import FitParams, RelationModel, fit, scores
from induction.resolve import Neighbour, Resolution, ResolvedFact
from llmclients.embeddings import HashEmbedder


def assert_round_trip(m: RelationModel, X: np.ndarray, where: Path, short: int) -> None:
    """Saved and loaded, ``m`` predicts the same; a row with only ``short`` columns is refused."""
    where.mkdir()
    m.save(where, "m")
    back = RelationModel.load(where, "m")
    assert np.allclose(back.predict_proba(X), m.predict_proba(X), atol=1e-6)
    with pytest.raises(ValueError):
        back.predict_proba(X[:, :short])


def test_features_are_fixed_width_and_see_holders_and_cues() -> None:
    new = FactView("I no longer enjoy jazz; these days I prefer techno.", "preference", "user", change=True, negation=True)
    old = FactView("An independent evaluation found that Atlas is faster.", "belief", "document")
    x = pair_features(new, old, PairContext(similarity=0.6), None, None, pair_embedding=False)
    assert x.shape == (len(STRUCT_NAMES),)
    named = dict(zip(STRUCT_NAMES, x))
    assert named["same_holder"] == 0 and named["new_user"] == 1 and named["old_evidence"] == 1
    assert named["new_change"] == 1 and named["neg_xor"] == 1 and named["old_evidence_cues"] >= 2
    u = np.ones(4, dtype=np.float32) / 2
    assert pair_features(new, old, PairContext(similarity=0.6), u, -u, True).shape == (len(STRUCT_NAMES) + 8,)
    with pytest.raises(ValueError):
        pair_features(new, old, PairContext(similarity=0.6), None, None, True)


@pytest.mark.parametrize("hidden", [0, 8])
def test_fit_is_deterministic_learns_and_round_trips(tmp_path: Path, hidden: int) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5)).astype(np.float32)
    y = (X[:, 0] > 0.5).astype(np.int64) + 2 * (X[:, 1] > 1.0).astype(np.int64) * (X[:, 0] <= 0.5)
    p = FitParams(hidden=hidden, epochs=200, lr=0.05, seed=3)
    a, b = fit(X, y, p), fit(X, y, p)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))  # same seed, same model
    s = scores(y, a.predict_proba(X).argmax(1))
    assert s["accuracy"] > 0.9 and s["supersedes/f1"] > 0.8
    a.manifest = {"labels": list(LABELS), "config": {"pair_embedding": False}}
    assert_round_trip(a, X, tmp_path / "m", short=4)


class _Always(RelationModel):
    """A stand-in model that proposes one label for every pair, with ``p`` (by default confident, but below
    ``model_overrides_cues``: the cue gates decide)."""

    def __init__(self, label: str, p: float = 0.85):
        super().__init__(mean=np.zeros(len(STRUCT_NAMES), np.float32), std=np.ones(len(STRUCT_NAMES), np.float32),
                         W2=np.zeros((len(STRUCT_NAMES), 4), np.float32), b2=np.zeros(4, np.float32),
                         manifest={"labels": list(LABELS), "config": {"pair_embedding": False}})
        self.label, self.p = label, p

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        P = np.zeros((len(X), len(LABELS)), dtype=np.float32)
        P[:, LABELS.index(self.label)] = self.p
        P[:, 0] += 1.0 - self.p
        return P


def _cand(fid: str, statement: str, kind: str, holder: str = "user", seq: int = 0,
          cues: tuple[str, ...] = ("change",)) -> CandidateFact:
    return CandidateFact(fact_id=fid, statement=statement, kind=kind, holder=holder, evidence=statement,  # type: ignore[arg-type]
                         source_turn_ids=(f"s:{seq}",), order=(seq, 0), cues=cues)  # type: ignore[arg-type]


def _resolution(new: CandidateFact, stored: list[Fact], older: bool = True) -> Resolution:
    nb = [Neighbour(fact_id=f.fact_id, similarity=0.8, in_session=False, older=older, same_holder=f.holder == new.holder,
                    near_concept=True, same_concept=True, same_turn=False) for f in stored]
    r = ResolvedFact(candidate=new, embedding=tuple([0.0] * 8), concept_id="u::c::x", neighbours=nb)
    return Resolution(facts=[r], existing={f.fact_id: f for f in stored}, validity={f.fact_id: "current" for f in stored})


def _fact(fid: str, statement: str, kind: str, holder: str = "user") -> Fact:
    return Fact(fact_id=fid, user_id="u", statement=statement, kind=kind, holder=holder)  # type: ignore[arg-type]


# (label proposed, new fact kind/holder, stored kind/holder, stored is older, expected supersedes, expected conflicts)
DISPOSE = [
    ("supersedes", ("preference", "user"), ("preference", "user"), True, ["old"], []),
    ("supersedes", ("preference", "user"), ("experience", "user"), True, ["old"], []),  # an experience outgrown
    ("supersedes", ("preference", "user"), ("preference", "user"), False, [], []),  # never backwards in time
    ("supersedes", ("belief", "document"), ("preference", "user"), True, [], []),  # evidence disputes, never replaces
    ("supersedes", ("preference", "Ann"), ("preference", "Bob"), True, [], []),  # another person's preference
    ("supersedes", ("event", "user"), ("preference", "user"), True, [], []),  # kinds that cannot replace
    ("conflicts_with", ("belief", "document"), ("preference", "user"), True, [], ["old"]),  # user vs evidence
    ("conflicts_with", ("preference", "Ann"), ("preference", "Bob"), True, [], []),
    ("conflicts_with", ("belief", "assistant"), ("belief", "document"), True, [], []),
    ("conflicts_with", ("belief", "assistant"), ("belief", "assistant"), True, [], []),  # evidence vs evidence
    ("conflicts_with", ("belief", "assistant"), ("circumstance", "user"), True, [], []),  # what the user does
    ("conflicts_with", ("belief", "document"), ("belief", "user"), True, [], ["old"]),  # what the user believes
    ("conflicts_with", ("belief", "assistant"), ("belief", "user"), True, [], []),  # the assistant, not correcting
]


@pytest.mark.parametrize("label,new,old,older,sup,conf", DISPOSE)
def test_the_model_proposes_and_the_rules_dispose(label: str, new: tuple[str, str], old: tuple[str, str], older: bool,
                                                  sup: list[str], conf: list[str]) -> None:
    adj = ModelAdjudicator(_Always(label), HashEmbedder(8), RelationModelConfig())
    c = _cand("new", "I really prefer techno now.", new[0], new[1], seq=2)
    res = _resolution(c, [_fact("old", "I love jazz.", old[0], old[1])], older=older)
    d = adj.adjudicate(res, Snapshot(user_id="u")).decisions[0]
    assert d.label == "new" and d.supersedes == sup and d.conflicts_with == conf


def test_an_instruction_disputes_nothing_and_a_request_is_not_disputed() -> None:
    """Outside evidence that instructs ("Use TLS…") claims nothing; a user's request for help states nothing
    (BEAM: such pairs were most of the 814 conflicts, none right; docs/results/relations.md revision 6)."""
    adj = ModelAdjudicator(_Always("conflicts_with"), HashEmbedder(8), RelationModelConfig())
    belief = [_fact("old", "I think plain HTTP is fine for my app.", "belief")]
    step = _cand("new", "assistant: Data in Transit: Use TLS/SSL encryption for all data.", "belief", "assistant", seq=2)
    assert adj.adjudicate(_resolution(step, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    claim = _cand("new", "document: Plain HTTP exposes every password sent over it.", "belief", "document", seq=2)
    assert adj.adjudicate(_resolution(claim, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]
    asks = [_fact("old", "I'm not sure how to configure HTTPS for my app.", "belief")]
    assert adj.adjudicate(_resolution(claim, asks), Snapshot(user_id="u")).decisions[0].conflicts_with == []


def test_the_assistant_disputes_a_person_only_when_it_corrects() -> None:
    """The assistant's lines are advice and explanations written for the user: on BEAM every one the model set
    against the user restated or answered the request. A document disputes on the model's word; the
    assistant only with a correction ("Actually, …", "a common myth", "studies show")."""
    belief = [_fact("old", "I think plain HTTP is fine for my app.", "belief")]
    said = "Plain HTTP exposes every password sent over it."
    for on, line, want in [(True, f"assistant: {said}", []), (True, f"assistant: Actually, {said.lower()}", ["old"]),
                           (True, f"document: {said}", ["old"]), (False, f"assistant: {said}", ["old"])]:
        adj = ModelAdjudicator(_Always("conflicts_with"), HashEmbedder(8),
                               RelationModelConfig(assistant_disputes_on_correction=on))
        holder = line.split(":")[0]
        new = _cand("new", line, "belief", holder, seq=2)
        assert adj.adjudicate(_resolution(new, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == want, line
    # nor does the assistant's later explanation replace its earlier one, unless it says it corrects it
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    earlier = [_fact("old", "assistant: Determinism: all events are determined by prior causes.", "belief", "assistant")]
    for line, want in [("assistant: Hard Determinism: free will does not exist, but determinism is true.", []),
                       ("assistant: Actually, I was wrong: determinism is not the view that all events are caused.",
                        ["old"])]:
        new = _cand("new", line, "belief", "assistant", seq=2)
        assert adj.adjudicate(_resolution(new, earlier), Snapshot(user_id="u")).decisions[0].supersedes == want, line


def test_one_persons_two_statements_conflict_only_when_they_oppose() -> None:
    """A restatement with more detail ("I'm using Bootstrap 5.3.0 for my layout, and I've added tabindex…")
    is no conflict with the earlier statement; opposite polarity or a turn against something is."""
    adj = ModelAdjudicator(_Always("conflicts_with"), HashEmbedder(8), RelationModelConfig())
    old = [_fact("old", "I'm using Bootstrap 5.3.0 for my layout.", "circumstance")]
    more = _cand("new", "I'm using Bootstrap 5.3.0 and I've added tabindex to my buttons.", "circumstance", seq=2,
                 cues=())
    assert adj.adjudicate(_resolution(more, old), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    opposite = _cand("new", "I'm not using Bootstrap for my layout.", "circumstance", seq=2, cues=("negation",))
    assert adj.adjudicate(_resolution(opposite, old), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]
    off = ModelAdjudicator(_Always("conflicts_with"), HashEmbedder(8), RelationModelConfig(conflict_needs_contrast=False))
    assert off.adjudicate(_resolution(more, old), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]


def test_a_confident_model_overrides_the_cue_gates_but_not_the_rules() -> None:
    """At P(conflicts_with) >= model_overrides_cues the model's word stands without a cue word: outside evidence in
    free phrasing ("Astronauts have reported…", no "actually") disputes a belief, and a person's own report that
    contradicts a constraint without "not" ("ate it all week and felt fine") conflicts with it. What the ontology
    allows (graph.rules.may_conflict) and the no-state / instruction checks still dispose."""
    sure = ModelAdjudicator(_Always("conflicts_with", p=0.95), HashEmbedder(8), RelationModelConfig())
    belief = [_fact("old", "I think plain HTTP is fine for my app.", "belief")]
    plain = _cand("new", "assistant: Plain HTTP exposes every password sent over it.", "belief", "assistant", seq=2)
    assert sure.adjudicate(_resolution(plain, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]
    allergy = [_fact("old", "I'm allergic to sesame.", "constraint")]
    ate = _cand("new", "I ate sesame bread all week and felt great.", "experience", seq=2, cues=())
    assert sure.adjudicate(_resolution(ate, allergy), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]
    # below the bar the gates decide, and 1.0 keeps them always
    unsure = ModelAdjudicator(_Always("conflicts_with", p=0.85), HashEmbedder(8), RelationModelConfig())
    assert unsure.adjudicate(_resolution(ate, allergy), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    never = ModelAdjudicator(_Always("conflicts_with", p=0.95), HashEmbedder(8), RelationModelConfig(model_overrides_cues=1.0))
    assert never.adjudicate(_resolution(plain, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    # the rules still dispose: an instruction claims nothing, a circumstance is not disputed by evidence
    step = _cand("new", "assistant: Data in Transit: Use TLS/SSL encryption for all data.", "belief", "assistant", seq=2)
    assert sure.adjudicate(_resolution(step, belief), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    does = [_fact("old", "I run my app over plain HTTP.", "circumstance")]
    assert sure.adjudicate(_resolution(plain, does), Snapshot(user_id="u")).decisions[0].conflicts_with == []


class _Graded(_Always):
    """P(supersedes) given per candidate, in the candidates' order."""

    def __init__(self, p: Sequence[float]):
        super().__init__("supersedes")
        self.p = list(p)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        P = np.zeros((len(X), len(LABELS)), dtype=np.float32)
        P[:, LABELS.index("supersedes")] = self.p[:len(X)]
        P[:, 0] = 1.0 - P[:, LABELS.index("supersedes")]
        return P


# (new kind certain?, stored kinds, P(supersedes) per stored fact, expected kind, expected supersedes)
GUESSED_KIND = [
    # a guessed kind takes the kind under which it replaces the most (by P): "I've done a complete 180 on
    # travel" is no circumstance because its most probable partner mentions busy weeks
    (False, ["circumstance", "plan", "plan"], [0.9, 0.8, 0.7], "plan", ["s0", "s1", "s2"]),
    (False, ["circumstance", "preference"], [0.9, 0.8], "circumstance", ["s0"]),
    (False, ["circumstance", "preference"], [0.8, 0.8], "circumstance", ["s0"]),  # a tie: the first partner's
    (False, ["circumstance"], [0.9], "circumstance", ["s0"]),
    (True, ["circumstance", "plan", "plan"], [0.9, 0.8, 0.7], "preference", ["s1", "s2"]),  # a certain kind stays
    (False, ["event", "plan"], [0.9, 0.6], "preference", ["s0", "s1"]),  # a tie with its own kind: its own
    (False, ["plan", "plan"], [0.4, 0.3], "preference", []),  # under the threshold nothing is replaced
]


@pytest.mark.parametrize("certain,kinds,p,kind,sup", GUESSED_KIND)
def test_a_guessed_kind_is_the_one_that_replaces_most(certain: bool, kinds: list[str], p: list[float], kind: str,
                                                      sup: list[str]) -> None:
    adj = ModelAdjudicator(_Graded(p), HashEmbedder(8), RelationModelConfig())
    c = _cand("new", "I've done a complete 180 on travel.", "preference", seq=2).model_copy(update={"kind_certain": certain})
    stored = [_fact(f"s{i}", f"Statement {i} about trips and weeks.", k) for i, k in enumerate(kinds)]
    d = adj.adjudicate(_resolution(c, stored), Snapshot(user_id="u")).decisions[0]
    assert (d.kind or c.kind, d.supersedes) == (kind, sup)


def test_a_replacement_must_say_that_something_changed() -> None:
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    quiet = _cand("new", "We love painting together.", "preference", seq=2, cues=())
    for kind in ("preference", "experience"):
        res = _resolution(quiet, [_fact("old", "We made our own pots.", kind)])
        assert adj.adjudicate(res, Snapshot(user_id="u")).decisions[0].supersedes == []
    shifted = _cand("new", "Lately we love painting instead.", "preference", seq=2, cues=())
    res = _resolution(shifted, [_fact("old", "We love pottery.", "preference")])
    assert adj.adjudicate(res, Snapshot(user_id="u")).decisions[0].supersedes == ["old"]


def test_an_experience_is_replaced_only_on_a_cue_in_the_new_facts_own_sentence() -> None:
    """The extractor carries a change cue onto the next sentence ("I decided to take a break…" ->
    "Scriptwriting feels like a natural progression"): that carried cue does not replace what happened."""
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    old = [_fact("old", "Engaging with fellow readers fostered stimulating discussions.", "experience")]
    carried = _cand("new", "Diving into scriptwriting feels like a natural progression for me.", "preference", seq=2)
    carried.qualifiers["change_cue"] = "decided to take a break"
    assert adj.adjudicate(_resolution(carried, old), Snapshot(user_id="u")).decisions[0].supersedes == []
    own = _cand("new", "I no longer enjoy those discussions.", "preference", seq=2)
    own.qualifiers["change_cue"] = "no longer"
    assert adj.adjudicate(_resolution(own, old), Snapshot(user_id="u")).decisions[0].supersedes == ["old"]


def test_questions_and_responses_never_supersede_or_get_superseded() -> None:
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    ask = _cand("new", "How often are you able to go hiking now?", "preference", seq=2)
    assert adj.adjudicate(_resolution(ask, [_fact("old", "I love hiking.", "preference")]),
                          Snapshot(user_id="u")).decisions[0].supersedes == []
    now = _cand("new", "I'm not giving up now!", "preference", seq=2)
    assert adj.adjudicate(_resolution(now, [_fact("old", "Keep it up - you're gonna make it!", "preference")]),
                          Snapshot(user_id="u")).decisions[0].supersedes == []


def test_a_replacement_covers_the_whole_earlier_turn() -> None:
    """One edge into a long earlier turn replaces its other stateful facts of the same holder too."""
    def stored(fid: str, statement: str, kind: str = "preference", holder: str = "user", turn: str = "s:1") -> Fact:
        return Fact(fact_id=fid, user_id="u", statement=statement, kind=kind, holder=holder,  # type: ignore[arg-type]
                    source_turn_ids=(turn,))
    turn = [stored("old", "I love big horror screenings."), stored("sib", "The crowd's screams were the best part.", "experience"),
            stored("ask", "Have you been to one?"), stored("ann", "Ann: I love them too.", holder="Ann"),
            stored("circ", "We live near the old cinema.", "circumstance"), stored("else", "I love tea.", turn="s:0")]
    snap = Snapshot(user_id="u", facts={f.fact_id: f for f in turn})
    c = _cand("new", "Lately I'd rather watch horror films alone.", "preference", seq=2)
    res = _resolution(c, [turn[0]])
    every = RelationModelConfig(turn_min_similarity=0.0)
    got = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), every).adjudicate(res, snap)
    # not the question, not another holder's fact, not another turn; the turn's circumstance goes with it
    # (graph.rules.may_supersede_sibling), unless sibling_circumstances is off
    assert got.decisions[0].supersedes == ["old", "sib", "circ"]
    strict = RelationModelConfig(turn_min_similarity=0.0, sibling_circumstances=False)
    assert ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), strict).adjudicate(
        _resolution(c, [turn[0]]), snap).decisions[0].supersedes == ["old", "sib"]
    off = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig(supersede_turn=False))
    assert off.adjudicate(_resolution(c, [turn[0]]), snap).decisions[0].supersedes == ["old"]
    # a sibling far from the new fact (here: the new fact's vector is orthogonal to everything) stays
    near = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig(turn_min_similarity=0.35))
    assert near.adjudicate(_resolution(c, [turn[0]]), snap).decisions[0].supersedes == ["old"]


def test_ingest_gives_the_model_the_turns_topic_overlap() -> None:
    """The turn features at ingest come from the facts of both turns (stored ones embedded on demand):
    the earlier turn that says what the new turn says ranks first, with overlap 1."""
    seen: list[np.ndarray] = []

    class Spy(_Always):
        def predict_proba(self, X: np.ndarray) -> np.ndarray:
            seen.append(X)
            return super().predict_proba(X)

    def stored(fid: str, statement: str, turn: str) -> Fact:
        return Fact(fact_id=fid, user_id="u", statement=statement, kind="preference", holder="user",  # type: ignore[arg-type]
                    source_turn_ids=(turn,))
    facts = [stored("a", "I love jazz.", "s:0"), stored("b", "I often go to jazz clubs.", "s:0"),
             stored("c", "I bought a red bike.", "s:1")]
    emb = HashEmbedder(8)
    c = _cand("new", "I often go to jazz clubs.", "preference", seq=2)
    res = _resolution(c, [facts[0], facts[2]])
    res.facts[0] = res.facts[0].model_copy(update={"embedding": tuple(float(x) for x in emb.embed([c.statement])[0])})
    ModelAdjudicator(Spy("unrelated"), emb, RelationModelConfig()).adjudicate(
        res, Snapshot(user_id="u", facts={f.fact_id: f for f in facts}))
    col = {n: seen[0][:, STRUCT_NAMES.index(n)] for n in ("turn_sim", "turn_top", "turn_rank_frac")}
    assert col["turn_sim"][0] == pytest.approx(1.0) and col["turn_sim"][1] < 0.99  # "a"'s turn holds the same sentence
    assert list(col["turn_top"]) == [1.0, 0.0] and list(col["turn_rank_frac"]) == [0.0, 0.5]


class _Axes:
    """Each known sentence is one axis (cosines are 1 or 0): turn topics set by hand."""

    dim = 4

    def __init__(self, axis: dict[str, int]):
        self.axis = axis

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(self.dim, dtype=np.float32)[[self.axis[t] for t in texts]]


# (new fact's kind, turn_overlap_siblings, sibling_kinds_of_turn, expected supersedes)
TURN_SIBLINGS = [
    ("preference", 0.0, False, ["old"]),  # the crowd sentence is far from the new one: it stays
    ("preference", 0.45, False, ["old", "crowd"]),  # but the new turn also speaks of the crowd: same topic
    ("plan", 0.45, False, ["old"]),  # a plan does not replace a preference on its own kind
    ("plan", 0.45, True, ["old", "crowd"]),  # the new turn holds a preference: the turn replaces the turn
]


@pytest.mark.parametrize("kind,overlap,turn_kinds,expected", TURN_SIBLINGS)
def test_whole_turn_replacement_follows_the_turns_topic_and_kinds(kind: str, overlap: float, turn_kinds: bool,
                                                                  expected: list[str]) -> None:
    old = Fact(fact_id="old", user_id="u", statement="I went to a big horror screening.", kind="event", holder="user",
               source_turn_ids=("s:1",))
    crowd = Fact(fact_id="crowd", user_id="u", statement="I love the crowd's screams.", kind="preference",
                 holder="user", source_turn_ids=("s:1",))
    emb = _Axes({old.statement: 0, crowd.statement: 1, "no": 2})
    new = _cand("new", "No more horror screenings for me; I'd rather watch alone.", kind, seq=2)
    also = _cand("also", "The screaming crowds just got on my nerves.", "preference", seq=2)
    nb = [Neighbour(fact_id="old", similarity=0.8, in_session=False, older=True, same_holder=True, near_concept=True,
                    same_concept=True, same_turn=False)]
    res = Resolution(facts=[ResolvedFact(candidate=new, embedding=(1.0, 0.0, 0.0, 0.0), concept_id="u::c::x", neighbours=nb),
                            ResolvedFact(candidate=also, embedding=(0.0, 1.0, 0.0, 0.0), concept_id="u::c::x")],
                     existing={"old": old}, validity={"old": "current", "crowd": "current"})
    cfg = RelationModelConfig(turn_overlap_siblings=overlap, sibling_kinds_of_turn=turn_kinds)
    got = ModelAdjudicator(_Always("supersedes"), emb, cfg).adjudicate(
        res, Snapshot(user_id="u", facts={"old": old, "crowd": crowd}))
    assert got.decisions[0].supersedes == expected


def test_an_elaboration_or_a_continuation_replaces_nothing() -> None:
    """LoCoMo's "now" mostly reports progress on the same path: only a turn that turns against something
    (graph.rules.reverses) or says the opposite replaces; "still" / "too" say the old state persists."""
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    old = [_fact("old", "My goal is to give kids a loving home.", "preference")]

    def sup(*statements: str) -> list[str]:
        cs = [_cand(f"n{k}", st, "preference", seq=2) for k, st in enumerate(statements)]
        res = _resolution(cs[0], old)
        res.facts.extend(ResolvedFact(candidate=c, embedding=tuple([0.0] * 8), concept_id="u::c::x", neighbours=[])
                         for c in cs[1:])
        return adj.adjudicate(res, Snapshot(user_id="u")).decisions[0].supersedes

    assert sup("Now I'm passionate about creating a safe place for people to grow.") == []
    assert sup("Now I want to help people go through it too.", "I've realized adoption isn't for me.") == []
    # the same sentence in a turn that turns against the old plan does replace it
    assert sup("Now I'm passionate about creating a safe place for people to grow.",
               "I've realized adoption isn't for me.") == ["old"]
    lenient = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig(change_needs_reversal=False))
    assert lenient.adjudicate(_resolution(_cand("n", "Now I'm passionate about helping people grow.", "preference", seq=2),
                                          old), Snapshot(user_id="u")).decisions[0].supersedes == ["old"]


def test_an_old_turn_that_only_said_lately_reported_no_change() -> None:
    """A turn that reported a change is replaced only on the new fact's own cue (graph.rules.change_evidenced);
    "it's been quite exhilarating lately" reported none, so a later turn that turns against it replaces it."""
    old = Fact(fact_id="old", user_id="u", statement="I've been diving into movie trivia, and it's been exhilarating lately.",
               kind="preference", source_turn_ids=("s:1",))
    snap = Snapshot(user_id="u", facts={"old": old})
    new = _cand("n0", "I'd like to dive into film history on my own.", "preference", seq=2, cues=())
    why = _cand("n1", "I've realized that competitive trivia has become more stressful than fun.", "circumstance", seq=2,
                cues=())

    def sup(cfg: RelationModelConfig) -> list[str]:
        res = _resolution(new, [old])
        res.facts.append(ResolvedFact(candidate=why, embedding=tuple([0.0] * 8), concept_id="u::c::x", neighbours=[]))
        return ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), cfg).adjudicate(res, snap).decisions[0].supersedes

    assert sup(RelationModelConfig()) == ["old"]
    assert sup(RelationModelConfig(change_needs_reversal=False)) == []  # the old reading: "lately" reported a change


def test_duplicates_need_the_same_holder_and_superseded_facts_are_not_candidates() -> None:
    c = _cand("new", "I love jazz.", "preference", seq=2)
    # by default the model's duplicate label drops nothing: a restatement keeps its own turn as evidence
    keep = ModelAdjudicator(_Always("duplicate"), HashEmbedder(8), RelationModelConfig())
    assert keep.adjudicate(_resolution(c, [_fact("old", "I love jazz!", "preference")]),
                           Snapshot(user_id="u")).decisions[0].label == "new"
    adj = ModelAdjudicator(_Always("duplicate", p=0.95), HashEmbedder(8), RelationModelConfig(duplicate_threshold=0.9))
    d = adj.adjudicate(_resolution(c, [_fact("old", "I love jazz!", "preference")]), Snapshot(user_id="u")).decisions[0]
    assert d.label == "duplicate" and d.duplicate_of == "old"
    other = adj.adjudicate(_resolution(c, [_fact("old", "I love jazz!", "preference", "Ann")]), Snapshot(user_id="u"))
    assert other.decisions[0].label == "new"
    sup = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())
    res = _resolution(c, [_fact("old", "I love jazz!", "preference")])
    res.validity["old"] = "superseded"  # an already replaced fact is not replaced (or revived) again
    assert sup.adjudicate(res, Snapshot(user_id="u")).decisions[0].supersedes == []


def test_an_artefact_for_another_embedder_is_refused(tmp_path: Path) -> None:
    m = _Always("unrelated")
    m.manifest["embedder"] = {"kind": "minilm", "dim": 8, "probe_text": "probe", "probe": [1.0] + [0.0] * 7}
    m.save(tmp_path, "m")
    with pytest.raises(ValueError, match="embedder"):
        ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(artefact_dir=str(tmp_path), artefact_name="m"))
    with pytest.raises(FileNotFoundError):
        ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(artefact_dir=str(tmp_path), artefact_name="absent"))


def test_an_artefact_trained_on_other_features_is_refused(tmp_path: Path) -> None:
    m = _Always("unrelated")
    m.manifest["features"] = [n for n in STRUCT_NAMES if not n.startswith("turn_")]  # before the turn features
    m.save(tmp_path, "m")
    with pytest.raises(ValueError, match="other features"):
        ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(artefact_dir=str(tmp_path), artefact_name="m"))
    m.manifest["features"] = list(STRUCT_NAMES)
    m.save(tmp_path, "m")
    assert ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(artefact_dir=str(tmp_path), artefact_name="m"))


@pytest.mark.parametrize("new_turn, old_turn, expected", [
    ([[1, 0]], [[1, 0]], 1.0),  # the same topic
    ([[1, 0], [0, 1]], [[1, 0]], 0.5),  # half the new turn is about the old one
    ([[1, 0], [0, 1]], [[1, 0], [0, 1]], 1.0),  # each new fact finds its match
    ([[0, 1]], [[1, 0], [-1, 0]], 0.0),  # another topic
    ([], [[1, 0]], 0.0),  # an empty turn shares nothing
])
def test_turn_overlap_is_the_mean_best_match(new_turn: list[list[float]], old_turn: list[list[float]],
                                             expected: float) -> None:
    a, b = np.asarray(new_turn, np.float32).reshape(-1, 2), np.asarray(old_turn, np.float32).reshape(-1, 2)
    assert turn_overlap(a, b) == pytest.approx(expected)


def test_turn_features_reach_the_row() -> None:
    v = FactView("I no longer want to travel overseas.", "plan", "user")
    o = FactView("Last year I wrote a travel blog about my trip to Europe.", "event", "user")
    named = dict(zip(STRUCT_NAMES, pair_features(v, o, PairContext(similarity=0.5, turn_sim=0.7, turn_rank=1, n_turns=4),
                                                 None, None, False)))
    assert named["turn_sim"] == pytest.approx(0.7) and named["turn_rank_frac"] == 0.25 and named["turn_top"] == 0
    assert turn_ranks({"t1": 0.2, "t3": 0.7, "t5": 0.4}) == {"t3": 0, "t5": 1, "t1": 2}


@pytest.mark.slow
def test_shipped_model_direction_end_to_end(tmp_path: Path) -> None:
    """The shipped artefact with MiniLM: a later change replaces the earlier preference, and the old
    preference restated afterwards ("I used to love jazz") does not flip the newer one back."""
    from evomem.settings import Settings
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from induction.session import Session
    from induction.branch import validity_map
    from memcore.memory import Memory

    s = Settings()
    s.store.path = str(tmp_path / "store")
    mem = Memory.from_settings(s)
    ing = make_ingestor(mem, IngestConfig())
    assert ing.adjudicator.name == "model"
    turns = ["I really love jazz, it is my favourite music.", "I understand.",
             "I no longer enjoy jazz; these days I prefer techno.", "Sounds fun.",
             "I used to love jazz back in college."]
    ing.ingest(Session.model_validate({"session_id": "s1", "user_id": "u",
                                       "turns": [{"role": "user" if i % 2 == 0 else "assistant", "text": t}
                                                 for i, t in enumerate(turns)]}))
    snap = mem.store.load_snapshot("u")
    val = validity_map(snap, list(snap.facts))
    by_text = {f.statement: val[fid] for fid, f in snap.facts.items()}
    mem.close()
    assert by_text["I really love jazz, it is my favourite music."] == "superseded"
    assert by_text["I no longer enjoy jazz; these days I prefer techno."] == "current"


def test_llm_schema_uses_the_relation_model_labels() -> None:
    from typing import get_args

    from induction.prompts import adjudicate_v2

    assert set(get_args(adjudicate_v2.FactLabel.model_fields["label"].annotation)) == set(LABELS)
    assert adjudicate_v2.VERSION == "adjudicate-v2"


def test_pair_projection_is_part_of_the_artefact(tmp_path: Path) -> None:
    """``pair_dims``: the pair-vector block is projected onto its top principal axes inside the model, so
    callers still pass the raw (structural + pair) row, and the projection survives save/load."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3 + 20)).astype(np.float32)
    y = (X[:, 0] + X[:, 3] > 0.5).astype(np.int64)
    m = fit(X, y, FitParams(epochs=150, lr=0.05, pair_dims=4, pair_cols=20))
    assert m.proj is not None and m.proj.shape == (20, 4) and m.mean.shape == (7,) and m.n_features == 23
    assert np.array_equal(m.predict_proba(X), fit(X, y, FitParams(epochs=150, lr=0.05, pair_dims=4, pair_cols=20)).predict_proba(X))
    m.manifest = {"labels": list(LABELS), "config": {"pair_embedding": True}}
    assert_round_trip(m, X, tmp_path / "p", short=7)


def test_pair_l2_shrinks_only_the_pair_columns() -> None:
    """``pair_l2``: a penalty on the pair-vector columns alone (they memorise personas); the structural
    columns keep the plain ``l2`` and still carry the signal."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 3 + 20)).astype(np.float32)
    y = (X[:, 0] + X[:, 3] > 0.5).astype(np.int64)
    plain = fit(X, y, FitParams(epochs=200, lr=0.05, struct_cols=3))
    tight = fit(X, y, FitParams(epochs=200, lr=0.05, struct_cols=3, pair_l2=5.0))
    assert np.abs(tight.W2[3:]).max() < 0.2 * np.abs(plain.W2[3:]).max()
    assert np.abs(tight.W2[0]).max() > 5 * np.abs(tight.W2[3:]).max()  # the structural signal is kept


def test_rows_sharing_a_persona_sentence_fold_together() -> None:
    """k-fold protocol: MemSyco rows reuse a persona's sentences, so rows sharing a (rare) sentence form one
    cluster that sits in one fold; boilerplate found in more than ``max_rows`` rows joins nothing."""
    from training_data.relations_train import kfold, RelationModelConfig, text_clusters

    groups = np.array(["r1", "r1", "r2", "r3", "r4", "r5"])
    new = np.array(["a", "b", "a", "c", "boiler", "boiler"])
    old = np.array(["x", "y", "z", "boiler", "w", "v"])
    units = text_clusters(groups, new, old, np.ones(6, bool), max_rows=2)
    assert units["r1"] == units["r2"] == "r1"                   # share "a"
    assert len({units["r3"], units["r4"], units["r5"]}) == 3     # "boiler" is in 3 rows: joins nothing
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3)).astype(np.float32)
    y = np.array([0, 1, 0, 1, 0, 1])
    r = kfold(X, y, groups, np.ones(6, bool), np.ones(6, bool), RelationModelConfig(epochs=5), 2, 0, lambda row: None, units)
    # the 2-row cluster (3 pairs) is held out whole, plus one single row: 4 pairs; the other fold: 2 single rows
    assert sorted(f["heldout"]["n"] for f in r["folds"]) == [2.0, 4.0]
    assert "heldout_pooled_macro_f1" in r and "gap_pooled" in r


def test_a_realisation_of_degree_or_a_conceded_difficulty_turns_against_nothing() -> None:
    """Issue 44, LoCoMo false-edge classes (sentences from no benchmark): "makes me realise how lucky I am"
    deepens the same view (a realisation of degree is no reversal), and a negation that only concedes a
    difficulty ("isn't always easy, but I love it") gives the statement no opposite polarity; a realisation
    with a clause and a plain negation still do."""
    adj = ModelAdjudicator(_Always("supersedes"), HashEmbedder(8), RelationModelConfig())

    def sup(new: str, old: str, cues: tuple[str, ...] = ("change",)) -> list[str]:
        res = _resolution(_cand("n", new, "preference", seq=2, cues=cues), [_fact("old", old, "preference")])
        return adj.adjudicate(res, Snapshot(user_id="u")).decisions[0].supersedes

    dog = "I love having the dog around the house."
    assert sup("Walking the dog every morning makes me realise how lucky I am.", dog) == []
    assert sup("I've realised I'm happier without a pet.", dog) == ["old"]
    cello = "Learning the cello isn't always easy, but I love it."
    assert sup("I feel like I could practise the cello all day now.", cello, ()) == []
    assert sup("I feel like I could practise the cello all day now.", "I don't play the cello.", ()) == ["old"]


@pytest.mark.parametrize("person_gate,conf", [(True, []), (False, ["old"])])
def test_a_question_disputes_nothing_even_with_the_cue_gates_off(person_gate: bool, conf: list[str]) -> None:
    """The cross kind runs with cue_gates off; a question still holds no state, so it joins no conflict
    (RelationModelConfig.person_gate). Sentences from no benchmark."""
    cfg = RelationModelConfig(cue_gates=False, person_gate=person_gate, same_holder_conflict_threshold=0.5)
    adj = ModelAdjudicator(_Always("conflicts_with", 0.9), HashEmbedder(8), cfg)
    old = [_fact("old", "I'm allergic to feathers.", "constraint")]
    ask = _cand("new", "Would a feather pillow be a bad idea for someone allergic to feathers?", "belief", seq=2, cues=())
    assert adj.adjudicate(_resolution(ask, old), Snapshot(user_id="u")).decisions[0].conflicts_with == conf
    said = _cand("new", "Slept on a feather pillow all week and felt great.", "experience", seq=2, cues=())
    assert adj.adjudicate(_resolution(said, old), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]
