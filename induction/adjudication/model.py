"""The default offline adjudicator: the trained relation model proposes, the rules dispose.

Per new fact, its candidate partners (``candidates``: resolve's neighbours — embedding neighbours among
stored facts and earlier facts of the session, any holder — that are older, from another turn and
still current) are scored by the model (induction/relations/model.py) into supersedes /
conflicts_with / duplicate / unrelated. A label becomes a decision only if ``graph.rules`` allows it:
a replacement needs the same holder, a later statement and compatible kinds (``may_supersede``); a
conflict needs one holder, or a person against outside evidence (``may_conflict``). The edit
validator then checks acyclicity and the user boundary when the batch is applied. It runs the one
decision loop (``loop.decide_each``); concept operations are the rules' (``concept_ops``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from collections.abc import Sequence
import numpy as np

from graph.rules import EVIDENCE_HOLDERS, change_evidenced, may_conflict, may_supersede, may_supersede_sibling
from graph.snapshot import Snapshot
from induction.adjudication.concept_ops import concept_ops
from induction.adjudication.cross import cross_probabilities, load_cross, prefetch
from induction.adjudication.decisions import STATIVE, Adjudication, Decision
from induction.adjudication.loop import decide_each
from induction.adjudication.rules import has_negation
from induction.extract import CandidateFact
from induction.config import RelationModelConfig, RuleAdjudicatorConfig
from induction.relations.candidates import candidates
from induction.relations.features import (LABELS, PAST_STATE, SHIFT, STRUCT_NAMES, FactView, PairContext, pair_features,
                                          turn_overlap, turn_ranks, turn_shift)
from induction.relations.model import ARTEFACT_DIR, DEFAULT_NAME, PROBE, RelationModel
from induction.reading.change import CONCESSIVE, continues, reverses
from induction.reading.corrections import corrects
from induction.reading.instructions import instructs
from induction.reading.state import holds_state, may_replace
from induction.resolve import Neighbour, Resolution, ResolvedFact, embedding_text
from llmclients.embeddings import Embedder

# What happened (an event, an experience) is replaced only on the new fact's *own* explicit change cue,
# never on a sibling sentence's cue: a later "so now I'm redefining how I collaborate" builds on the
# chaotic jam session, it does not make it untrue (personalized_memory_use lost 3 rows to that).
_HISTORY = frozenset({"event", "experience"})


def _can_dispute(holder: str, statement: str, stateful: bool | None = None, assistant_must_correct: bool = False) -> bool:
    """May this side join a conflict: a person's statement that holds state
    (``induction.reading.state.holds_state``), or outside evidence that claims something rather than instructs
    (``induction.reading.instructions.instructs``); with ``assistant_must_correct``, the assistant's own line
    only when it says it corrects (``induction.reading.corrections.corrects``)."""
    if holder in EVIDENCE_HOLDERS:
        return not instructs(statement) and (holder != "assistant" or not assistant_must_correct or corrects(statement))
    return holds_state(statement) if stateful is None else stateful


def _own_cue(c: CandidateFact) -> bool:
    """The change cue is in the fact's own sentence, not carried over from the sentence before it
    (the extractor carries "I decided to take a break…" onto "scriptwriting feels like a natural progression")."""
    if "change" not in c.cues:
        return False
    w = (c.qualifiers.get("change_cue") or "").strip().lower()
    return not w or w in c.statement.lower()


SUP, CONF, DUP = LABELS.index("supersedes"), LABELS.index("conflicts_with"), LABELS.index("duplicate")


@lru_cache(maxsize=65536)
def _negated(statement: str) -> bool:
    return has_negation(statement)


@lru_cache(maxsize=65536)
def _conceded_only(statement: str) -> bool:
    """Is the statement's only negation inside a concession ("Writing isn't always easy, but I love it"): its
    main clause is positive, so its polarity is no opposite to a positive statement (a gate, not a feature)."""
    return has_negation(statement) and not has_negation(CONCESSIVE.regex.sub(" ", statement))


def _stored_text(statement: str, holder: str) -> str:
    prefix = f"{holder}: "
    return statement[len(prefix):] if holder != "user" and statement.startswith(prefix) else statement


class ModelAdjudicator:
    name = "model"

    def __init__(self, model: RelationModel, embedder: Embedder, cfg: RelationModelConfig | None = None,
                 rules: RuleAdjudicatorConfig | None = None):
        self.model, self.embedder = model, embedder
        self.cfg = cfg or RelationModelConfig()
        self.rules_cfg = rules or RuleAdjudicatorConfig()  # for its concept operations
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()
        self.screen: RelationModel | None = None  # the cross kind's candidate screen (load)

    @classmethod
    def load(cls, embedder: Embedder, cfg: RelationModelConfig | None = None,
             rules: RuleAdjudicatorConfig | None = None) -> ModelAdjudicator:
        """Raises FileNotFoundError (no artefact) or ValueError (artefact does not fit this embedder)."""
        cfg = cfg or RelationModelConfig()
        if cfg.kind == "cross":  # induction/adjudication/cross.py
            cross_model, cfg, screen = load_cross(cfg, embedder)
            out = cls(cross_model, embedder, cfg, rules)
            out.screen = screen  # the cheap screen that picks the candidates the cross pass reads
            return out
        model = RelationModel.load(cfg.artefact_dir or ARTEFACT_DIR, cfg.artefact_name or DEFAULT_NAME)
        names = model.manifest.get("features")
        if names is not None and list(names[:len(STRUCT_NAMES)]) != list(STRUCT_NAMES):
            # an artefact from before a feature change would score rows it cannot read: retrain it
            raise ValueError(f"relation model {cfg.artefact_name} was trained on other features; retrain it "
                             "(evomem train-relations)")
        meta = model.manifest.get("embedder", {})
        probe = meta.get("probe")
        if probe is not None:
            # The features include similarities (and maybe vectors) of one sentence model: another embedder
            # (BGE-M3, the test hashing trick) would feed the model inputs it never saw.
            v = np.asarray(embedder.embed([str(meta.get("probe_text", PROBE))])[0], dtype=np.float32)
            ref = np.asarray(probe, dtype=np.float32)
            if v.shape != ref.shape or float(v @ ref) / (float(np.linalg.norm(v) * np.linalg.norm(ref)) or 1.0) < 0.98:
                raise ValueError(f"relation model {cfg.artefact_name} was trained with the {meta.get('kind')} embedder; "
                                 "this embedder gives different vectors")
        return cls(model, embedder, cfg, rules)

    # ------------------------------------------------------------ vectors of stored facts
    def _remember(self, fid: str, v: np.ndarray) -> None:
        if self.cfg.cache_vectors <= 0:
            return
        self._vecs[fid] = v
        self._vecs.move_to_end(fid)
        while len(self._vecs) > self.cfg.cache_vectors:
            self._vecs.popitem(last=False)

    def _vectors(self, res: Resolution, needed: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for r in res.facts:
            out[r.candidate.fact_id] = np.asarray(r.embedding, dtype=np.float32)
        missing = [f for f in dict.fromkeys(needed) if f not in out and f not in self._vecs and f in res.existing]
        if missing:
            texts = [_stored_text(res.existing[f].statement, res.existing[f].holder) for f in missing]
            for f, v in zip(missing, np.asarray(self.embedder.embed(texts), dtype=np.float32)):
                self._remember(f, v)
        for f in needed:
            if f not in out and f in self._vecs:
                out[f] = self._vecs[f]
        return out

    def _text(self, fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> str:
        """The statement as the pairs were trained on: the extractor's sentence, without a stored holder prefix."""
        if fid in by_id:
            return by_id[fid].candidate.statement
        f = res.existing[fid]
        return _stored_text(f.statement, f.holder)

    # ------------------------------------------------------------ adjudication
    def _view(self, fid: str, res: Resolution, by_id: dict[str, ResolvedFact], kinds: dict[str, str],
              turns: _Turns) -> FactView:
        if fid in by_id:
            c = by_id[fid].candidate
            return FactView(statement=embedding_text(c), kind=kinds.get(fid, c.kind), holder=c.holder,
                            change="change" in c.cues, negation="negation" in c.cues, scoped=c.scope is not None,
                            turn_change=turns.changed(c.source_turn_ids[0]))
        f = res.existing[fid]
        return FactView(statement=_stored_text(f.statement, f.holder), kind=f.kind, holder=f.holder,
                        change=bool(f.qualifiers.get("change_cue")), negation=_negated(f.statement),
                        scoped=f.scope is not None,
                        turn_change=bool(f.source_turn_ids) and turns.changed(f.source_turn_ids[0]))

    def adjudicate(self, res: Resolution, snap: Snapshot) -> Adjudication:
        cfg = self.cfg
        by_id = res.by_id()
        kinds: dict[str, str] = {}
        todo = {r.candidate.fact_id: candidates(r, by_id, set(), cfg.max_candidates) for r in res.facts
                if r.duplicate_of is None}
        vecs = self._vectors(res, [n.fact_id for ns in todo.values() for n in ns]) if self.model.pair_embedding else {}
        turns = _Turns(res, snap)
        topics = _TurnTopics()
        cross = getattr(self.model, "kind", "") == "cross"

        def features(r: ResolvedFact, cands: list[Neighbour]) -> tuple[FactView, list[FactView], np.ndarray]:
            c = r.candidate
            new = self._view(c.fact_id, res, by_id, kinds, turns)
            u = vecs.get(c.fact_id) if self.model.pair_embedding else None
            views = [self._view(n.fact_id, res, by_id, kinds, turns) for n in cands]
            t_new = c.source_turn_ids[0]
            t_old = [turns.turn_of(n.fact_id) or "" for n in cands]
            overlap = {t: self._turn_overlap(t_new, t, turns, topics) for t in dict.fromkeys(t_old)}
            ranks = turn_ranks(overlap)
            return new, views, np.stack([pair_features(new, v,
                                                       PairContext(similarity=n.similarity, rank=k, n_candidates=len(cands),
                                                                   same_concept=n.same_concept, near_concept=n.near_concept,
                                                                   in_session=n.in_session, turn_sim=overlap[t],
                                                                   turn_rank=ranks[t], n_turns=len(ranks)),
                                                       u, vecs.get(n.fact_id), self.model.pair_embedding)
                                         for k, (n, v, t) in enumerate(zip(cands, views, t_old))])

        if cross:  # the lower states of every statement the cross pass will read, in one batch
            rows = []
            for r in res.facts:
                cands = todo.get(r.candidate.fact_id, [])
                if cands:
                    rows.append((r.candidate.statement, [self._text(n.fact_id, res, by_id) for n in cands],
                                 features(r, cands)[2]))
            prefetch(self.model, self.screen, cfg, rows)

        def propose(r: ResolvedFact, d: Decision, closed: set[str]) -> None:
            c = r.candidate
            cands = [n for n in todo[c.fact_id] if n.fact_id not in closed
                     and (not self.model.pair_embedding or n.fact_id in vecs)]
            if cands:
                new, views, X = features(r, cands)
                P = (self._cross(c.statement, [self._text(n.fact_id, res, by_id) for n in cands], X)
                     if cross else self.model.predict_proba(X))
                shift = bool(SHIFT.search(new.statement))
                # the new fact's own change cue, not one the extractor carried over from the sentence before it
                own = _own_cue(c)
                change = own or (cfg.turn_change_evidence and new.turn_change)
                # a statement of a turn that reported a change is replaced only on the new fact's own cue
                # a turn that only says now / lately elaborates; one that turns against something changes direction
                rev = turns.reverses(c.source_turn_ids[0])
                cont = cfg.continuation_blocks and continues(new.statement)
                # an older turn reported a change only if it turned against something too ("it's been quite
                # exhilarating lately" is no report of a change that a later "I'd rather…" must respect)
                reported = [v.turn_change and (not cfg.change_needs_reversal or turns.reverses(turns.turn_of(n.fact_id)))
                            for n, v in zip(cands, views)]
                fix = cfg.assistant_disputes_on_correction
                # the assistant's explanations do not replace each other ("Hard Determinism: …" after
                # "Determinism: …"); only a line that says it corrects does
                fixes = c.holder != "assistant" or not fix or corrects(new.statement)
                # opposite polarity, not counting a negation that only concedes a difficulty
                neg = new.negation and not _conceded_only(c.statement)
                opp = [neg != (v.negation and not _conceded_only(v.statement)) for v in views]
                said = [(change_evidenced(v.kind, own if was or v.kind in _HISTORY else change, shift,
                                          o, old_reports_change=was)
                         and not cont and fixes
                         and (rev or o or not cfg.change_needs_reversal))
                        or not cfg.require_change_evidence for v, was, o in zip(views, reported, opp)]
                stateful = holds_state(new.statement)
                own_rev = reverses([c.statement])
                gates = cfg.cue_gates  # off: the cues above were the model's inputs, not vetoes
                self._decide(d, c.kind, c.kind_certain, c.holder, cands, P, res, by_id, kinds,
                             retrospective=bool(PAST_STATE.search(new.statement)),
                             partner_change=[v.change for v in views], evidenced=said if gates else (),
                             stateful=[may_replace(new.statement, v.statement) for v in views] if gates else [],
                             # questions, responses and instructions never dispute anything
                             person_ok=[_can_dispute(c.holder, new.statement, stateful)
                                        and _can_dispute(v.holder, v.statement) for v in views] if gates or cfg.person_gate else [],
                             # the cue gates, which a confident model overrides (model_overrides_cues)
                             cue_ok=[_can_dispute(c.holder, new.statement, stateful, fix)
                                     and _can_dispute(v.holder, v.statement, None, fix)
                                     # one person's two statements conflict only if they oppose each other:
                                     # in BEAM's long turns some sentence always says "but", so the new
                                     # statement's own words must turn against something
                                     and (v.holder != c.holder or not cfg.conflict_needs_contrast
                                          or own_rev or o) for v, o in zip(views, opp)] if gates else [])
                if d.supersedes and cfg.supersede_turn and (rev or not cfg.turn_needs_reversal):
                    self._whole_turns(d, c.kind, c.holder, turns, closed, kinds, by_id, res,
                                      np.asarray(r.embedding, dtype=np.float32), own_change=own, topics=topics)

        decisions = decide_each(res, propose)
        for r in res.facts:  # the vectors of this batch's facts are the stored vectors of tomorrow
            self._remember(r.candidate.fact_id, np.asarray(r.embedding, dtype=np.float32))
        return Adjudication(decisions=decisions, concept_ops=concept_ops(res, snap, decisions, self.rules_cfg))

    def _cross(self, statement: str, olds: list[str], X: np.ndarray) -> np.ndarray:
        """The cross kind's probabilities (``cross.cross_probabilities``: the screen's top candidates only)."""
        return cross_probabilities(self.model, self.screen, self.cfg, statement, olds, X)

    def _decide(self, d: Decision, kind: str, certain: bool, holder: str, cands: list[Neighbour], P: np.ndarray,
                res: Resolution, by_id: dict[str, ResolvedFact], kinds: dict[str, str], retrospective: bool = False,
                partner_change: Sequence[bool] = (), evidenced: Sequence[bool] = (), stateful: Sequence[bool] = (),
                person_ok: Sequence[bool] = (), cue_ok: Sequence[bool] = ()) -> None:
        cfg = self.cfg

        def info(fid: str) -> tuple[str, str]:
            if fid in by_id:
                c = by_id[fid].candidate
                return kinds.get(fid, c.kind), c.holder
            f = res.existing[fid]
            return f.kind, f.holder

        best = int(np.argmax(P[:, DUP]))
        dup = cfg.duplicate_threshold < 1.0 and P[best, DUP] >= cfg.duplicate_threshold  # 1.0: never drop
        if dup and info(cands[best].fact_id)[1] == holder:
            d.label, d.duplicate_of = "duplicate", cands[best].fact_id
            d.reason = f"model: duplicate (p={P[best, DUP]:.2f})"
            return
        order = np.argsort(-P[:, SUP], kind="stable")
        eligible: list[tuple[int, str, str]] = []  # (candidate, its kind, its holder), most probable first
        for k in order:
            if P[k, SUP] < cfg.supersede_threshold:
                break
            if evidenced and not evidenced[k]:
                continue  # the newer statement does not say anything changed (graph.rules.change_evidenced)
            if stateful and not stateful[k]:
                continue  # a question or a response holds no state to replace (induction.reading.state.holds_state)
            eligible.append((int(k), *info(cands[k].fact_id)))

        def chosen(use: str) -> list[int]:
            ok = [k for k, okind, oholder in eligible
                  if may_supersede(use, okind, holder, oholder, cands[k].older, retrospective,
                                   bool(partner_change[k]) if k < len(partner_change) else False)]
            return ok[:cfg.max_superseded_per_fact]

        use = kind
        if not certain:
            # a guessed kind takes the kind of a state it replaces (as the rules do): the one under which it
            # replaces the most (summed P); on a tie the most probable partner's, then its own ("I've done a
            # complete 180 on travel" is no circumstance because its first partner mentions busy weeks: the
            # trips it turns against are plans)
            first = [eligible[0][1]] if eligible and eligible[0][1] in STATIVE else []
            options = list(dict.fromkeys(first + [kind] + [o for _, o, _ in eligible if o in STATIVE]))
            if options:
                use = max(options, key=lambda o: (round(float(sum(P[k, SUP] for k in chosen(o))), 6), -options.index(o)))
        if cfg.cross_retype and cfg.kind == "cross" and eligible and not chosen(use) and chosen(eligible[0][1]):
            use = eligible[0][1]  # the replaced state's kind (RelationModelConfig.cross_retype)
        sup = [cands[k].fact_id for k in chosen(use)]
        if sup and use != kind:
            d.kind, kinds[d.fact_id] = use, use
            kind = use
        if sup:
            d.supersedes = sup
            d.reason = f"model: supersedes (p={float(P[order[0], SUP]):.2f})"
        k = int(np.argmax(P[:, CONF]))
        sure = cfg.model_overrides_cues < 1.0 and P[k, CONF] >= cfg.model_overrides_cues  # its word stands alone
        if cands[k].fact_id not in sup and (not person_ok or person_ok[k]) and (not cue_ok or cue_ok[k] or sure):
            okind, oholder = info(cands[k].fact_id)
            bar = cfg.same_holder_conflict_threshold if oholder == holder else cfg.conflict_threshold
            if cfg.cross_retype and cfg.kind == "cross" and (holder in EVIDENCE_HOLDERS) != (oholder in EVIDENCE_HOLDERS):
                # the person's side, read by the model as disputed by outside evidence, is a claim (a belief)
                kind, okind = (kind, "belief") if holder in EVIDENCE_HOLDERS else ("belief", okind)
            if P[k, CONF] >= bar and may_conflict(kind, okind, holder, oholder):
                d.conflicts_with = [cands[k].fact_id]
                d.reason = (d.reason + "; " if d.reason else "") + f"model: conflicts (p={float(P[k, CONF]):.2f})"

    def _sibling_vector(self, fid: str, turns: _Turns) -> np.ndarray | None:
        return self._sibling_vectors([fid], turns)[0]

    def _sibling_vectors(self, fids: Sequence[str], turns: _Turns) -> list[np.ndarray | None]:
        """Vectors of batch or stored facts; the stored ones not yet cached are embedded in one call."""
        stored = {f: turns.res.existing.get(f) or turns.snap.facts.get(f) for f in fids
                  if f not in turns._batch and f not in self._vecs}
        missing = [(f, x) for f, x in stored.items() if x is not None]
        if missing:
            vs = np.asarray(self.embedder.embed([_stored_text(x.statement, x.holder) for _, x in missing]), dtype=np.float32)
            for (f, _), v in zip(missing, vs):
                self._remember(f, v)
        return [np.asarray(turns._batch[f].embedding, dtype=np.float32) if f in turns._batch else self._vecs.get(f)
                for f in fids]

    def _turn_overlap(self, new_turn: str, old_turn: str, turns: _Turns, topics: _TurnTopics) -> float:
        """``features.turn_overlap`` of two turns, from their facts' vectors (batch or stored); each turn's
        vectors and each pair's overlap are computed once per batch (every fact of a turn asks again)."""
        key = (new_turn, old_turn)
        if key not in topics.overlap:
            for t in key:
                if t not in topics.vecs:
                    vs = [v for v in self._sibling_vectors(turns.members(t), turns) if v is not None]
                    topics.vecs[t] = np.stack(vs) if vs else np.zeros((0, 1), np.float32)
            a, b = topics.vecs[new_turn], topics.vecs[old_turn]
            topics.overlap[key] = turn_overlap(a, b) if a.shape[1:] == b.shape[1:] else 0.0
        return topics.overlap[key]

    def _whole_turns(self, d: Decision, kind: str, holder: str, turns: _Turns, closed: set[str],
                     kinds: dict[str, str], by_id: dict[str, ResolvedFact], res: Resolution,
                     u: np.ndarray | None = None, own_change: bool = False,
                     topics: _TurnTopics | None = None) -> None:
        """A change replaces what the earlier *turn* said, not one of its sentences: a long turn about an
        experience is several facts, and one edge to one of them leaves its siblings current (the
        MemSyco leak). Every other fact of a replaced fact's turn, of the same holder, that holds state,
        is still current and whose kind the new fact (or, with ``sibling_kinds_of_turn``, another fact of its
        turn) may replace, is replaced too (graph.rules disposes), if it is near the new fact or its turn shares
        the new turn's topic (``turn_overlap_siblings``)."""
        new_statement = by_id[d.fact_id].candidate.statement if d.fact_id in by_id else ""
        new_turn = by_id[d.fact_id].candidate.source_turn_ids[0] if d.fact_id in by_id else ""
        cfg = self.cfg
        my_kinds = {kind}
        if cfg.sibling_kinds_of_turn:
            my_kinds |= {kinds.get(f, r.candidate.kind) for f, r in by_id.items()
                         if r.candidate.source_turn_ids[0] == new_turn and r.candidate.holder == holder}
        extra: list[str] = []
        for fid in list(d.supersedes):
            for sib in turns.siblings(fid):
                if sib in d.supersedes or sib in extra or sib in closed or sib == d.fact_id:
                    continue
                info = turns.info(sib, kinds)
                if info is None:
                    continue
                skind, sholder, stmt = info
                if len(d.supersedes) + len(extra) >= self.cfg.max_superseded_per_turn_change:
                    break
                kinds_ok = any(may_supersede_sibling(k, skind, holder, sholder) if cfg.sibling_circumstances
                               else may_supersede(k, skind, holder, sholder, True) for k in my_kinds)
                if not (may_replace(new_statement, stmt) and kinds_ok):
                    continue
                if skind in _HISTORY and not own_change and self.cfg.history_siblings_own_cue:
                    continue  # what happened is replaced only on the new fact's own change cue (as change_evidenced)
                if u is not None and self.cfg.turn_min_similarity > 0:
                    # a sibling on another topic (LoCoMo turns mix news, remarks and images) is not replaced
                    v = self._sibling_vector(sib, turns)
                    near = v is not None and v.shape == u.shape and _cos(u, v) >= cfg.turn_min_similarity
                    if not near and not (cfg.turn_overlap_siblings > 0 and topics is not None and self._turn_overlap(
                            new_turn, turns.turn_of(sib) or "", turns, topics) >= cfg.turn_overlap_siblings):
                        continue
                extra.append(sib)
        if extra:
            d.supersedes = d.supersedes + extra
            d.reason += f"; turn: +{len(extra)}"


@dataclass
class _TurnTopics:
    """Per batch: each turn's fact vectors, and each (new turn, old turn) overlap."""

    vecs: dict[str, np.ndarray] = field(default_factory=dict)
    overlap: dict[tuple[str, str], float] = field(default_factory=dict)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b) / (float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0)


class _Turns:
    """Which turn each fact of this batch and of the store came from, and which turns report a change."""

    def __init__(self, res: Resolution, snap: Snapshot):
        self.res, self.snap = res, snap
        self._changed: dict[str, bool] = {}
        self._reverses: dict[str, bool] = {}
        self._by_turn: dict[str, list[str]] | None = None
        self._superseded: set[str] | None = None
        for r in res.facts:
            c = r.candidate
            t = c.source_turn_ids[0]
            self._changed[t] = self._changed.get(t, False) or "change" in c.cues or turn_shift(c.statement)
        self._batch = {r.candidate.fact_id: r for r in res.facts}

    def reverses(self, turn: str | None) -> bool:
        """Does ``turn`` (of this batch or of the store) turn against something (induction.reading.change.reverses)?"""
        if turn is None:
            return False
        if turn not in self._reverses:
            batch = [r.candidate.statement for r in self.res.facts if r.candidate.source_turn_ids[0] == turn]
            if batch:
                self._reverses[turn] = reverses(batch)
            else:
                self._index()
                assert self._by_turn is not None
                self._reverses[turn] = reverses(f.statement for f in (self.snap.facts.get(i) for i in self._by_turn.get(turn, []))
                                                if f is not None)
        return self._reverses[turn]

    def changed(self, turn: str) -> bool:
        if turn not in self._changed:
            self._index()
        return self._changed.get(turn, False)

    def _index(self) -> None:
        if self._by_turn is not None:
            return
        self._by_turn = {}
        for r in self.res.facts:
            if r.duplicate_of is None:
                self._by_turn.setdefault(r.candidate.source_turn_ids[0], []).append(r.candidate.fact_id)
        for fid, f in self.snap.facts.items():
            if f.source_turn_ids and f.retracted_at is None:
                t = f.source_turn_ids[0]
                self._by_turn.setdefault(t, []).append(fid)
                if t not in self._changed or not self._changed[t]:
                    self._changed[t] = bool(f.qualifiers.get("change_cue")) or turn_shift(f.statement)
        self._superseded = {r.dst for r in self.snap.relations.values() if r.type == "SUPERSEDES"}

    def turn_of(self, fid: str) -> str | None:
        if fid in self._batch:
            return self._batch[fid].candidate.source_turn_ids[0]
        f = self.res.existing.get(fid) or self.snap.facts.get(fid)
        return f.source_turn_ids[0] if f is not None and f.source_turn_ids else None

    def members(self, turn: str) -> list[str]:
        """The facts of ``turn`` (this batch's, not dropped as duplicates, and the store's, not retracted)."""
        self._index()
        assert self._by_turn is not None
        return self._by_turn.get(turn, [])

    def siblings(self, fid: str) -> list[str]:
        t = self.turn_of(fid)
        if t is None:
            return []
        self._index()
        assert self._by_turn is not None and self._superseded is not None
        return [s for s in self._by_turn.get(t, []) if s != fid and s not in self._superseded]

    def info(self, fid: str, kinds: dict[str, str]) -> tuple[str, str, str] | None:
        if fid in self._batch:
            c = self._batch[fid].candidate
            return kinds.get(fid, c.kind), c.holder, c.statement
        f = self.res.existing.get(fid) or self.snap.facts.get(fid)
        if f is None or self.res.validity.get(fid, "current") != "current":
            return None
        return f.kind, f.holder, _stored_text(f.statement, f.holder)
