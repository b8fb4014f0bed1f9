"""Pair features for the relation model: (a newer fact, one older candidate partner) -> a vector.

One function builds them for training (training_data/relations.py, from extracted dialogues) and at
ingest (induction/adjudication/model.py, from a Resolution), so the model sees the same inputs in
both places. Two groups:

- structural (``STRUCT_NAMES``): similarity and its rank among the candidates, holders (user /
  someone else / outside evidence), both kinds, change / polarity / contrast / evidence cue words on
  each side, whether the fact's turn reports a change (a sibling sentence may carry the cue: "I've shifted
  my perspective. I'd rather…"), whether it holds no state (a question or a response,
  ``induction.reading.state.holds_state``), concept neighbourhood, word and name overlap, scope, and how much the two
  facts' turns share a topic (``turn_overlap``);
- the pair's sentence vectors ``u * v`` and ``|u - v|`` (optional: ``pair_embedding``), which let the
  model see *what* changed, not only that the two are similar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import get_args

import numpy as np

from graph.models import FactKind
from graph.rules import EVIDENCE_HOLDERS
from induction.evidence import EVIDENCE_CUE
from induction.reading.state import holds_state

KINDS: tuple[str, ...] = get_args(FactKind)
LABELS: tuple[str, ...] = ("unrelated", "supersedes", "conflicts_with", "duplicate")

_WORD = re.compile(r"[a-z][a-z'\-]+")
_NAME = re.compile(r"(?<![.!?] )(?<!^)\b[A-Z][a-zA-Z]{2,}")
PAST_STATE = re.compile(r"\b(?:used to|back then|at (?:the )?first|initially|at one point|in the past|once|previously|"
                         r"years ago|when I was|as a (?:kid|child|teen))\b", re.I)
_CONTRAST = re.compile(r"\b(?:but|however|though|although|instead|rather than|whereas|yet|anymore|no longer)\b", re.I)
_NOW = re.compile(r"\b(?:now|these days|lately|recently|currently|nowadays|from now on|this year|again|started|starting)\b",
                  re.I)
# A turn that reports a change of mind, on any of its sentences: the cue and the new preference are often
# separate sentences ("I've actually shifted my perspective. I'd rather appreciate the film on its own terms").
_TURN_SHIFT = re.compile(r"\b(?:no longer|any ?more|from now on|these days|nowadays|lately|I'?(?:ve| have) (?:actually )?"
                         r"(?:shifted|changed|realized|realised|decided|been reconsidering|started to)|I(?:'m| am) now|"
                         r"I now|now I|I'?d (?:much )?rather|reconsider\w*|rethink\w*|shift(?:ed|ing)? (?:my|the) "
                         r"(?:focus|perspective|approach)|used to|changed my)\b", re.I)


# An outcome that went fine ("felt totally fine", "no reaction", "didn't bother me at all"): beside a stated
# constraint on the same thing, a later report of doing it without trouble contradicts the constraint
# without any "not" in it. A feature the model weighs (synthetic self_contradiction / self_consistent
# families), not a decision.
FINE_OUTCOME = re.compile(r"\b(?:felt|feel|was|were|been|turned out|came out|went)\s+(?:totally |completely |perfectly |"
                          r"absolutely |just )?(?:fine|ok|okay|great|good|normal|alright|all right)\b|"
                          r"\bno (?:problems?|issues?|reaction|symptoms?|trouble|side effects?)\b|\bwithout (?:any |a )?"
                          r"(?:problems?|issues?|reaction|trouble|symptoms?|side effects?)\b|\b(?:didn't|did not|doesn't|"
                          r"does not) (?:bother|affect|hurt) me\b|\bnothing happened\b", re.I)


@lru_cache(maxsize=65536)
def turn_shift(statement: str) -> bool:
    """Does this sentence say that something changed (the turn-level cue of ``FactView.turn_change``)?"""
    return bool(_TURN_SHIFT.search(statement))


# Any marker that the newer statement reports a shift (used by the adjudicator's change_evidenced check).
SHIFT = re.compile(_CONTRAST.pattern + "|" + _NOW.pattern, re.I)
_STOP = frozenset("the a an and or but to of in on for with at by from is are was were be been it this that i my me we our "
                  "you your they them he she his her its as so if than then there here have has had do does did not no "
                  "just really very also about more most some any all can could would should will what which who when "
                  "into out up down over after before because while am i'm i've i'd".split())


@dataclass(frozen=True)
class FactView:
    """What the features need to know about one fact (a fresh candidate or a stored fact)."""

    statement: str
    kind: str
    holder: str
    change: bool = False
    negation: bool = False
    scoped: bool = False
    turn_change: bool = False  # some statement of the same turn carries a change cue ("lately I've realized…")


@dataclass(frozen=True)
class PairContext:
    """How resolution relates the two facts."""

    similarity: float
    rank: int = 0
    n_candidates: int = 1
    same_concept: bool = False
    near_concept: bool = False
    in_session: bool = True
    # How much the two facts' *turns* share a topic (``turn_overlap``), and the old turn's rank among the
    # turns of this fact's candidates: a change turn replaces the earlier turn it is about, and one sentence
    # pair ("no longer … overseas" / "my trip to Europe") is a noisy witness of that.
    turn_sim: float = 0.0
    turn_rank: int = 0
    n_turns: int = 1


def turn_overlap(new_turn: np.ndarray, old_turn: np.ndarray) -> float:
    """Topic overlap of two turns from their facts' unit vectors ((n, d), (m, d)): the mean, over the new
    turn's facts, of each one's best cosine in the old turn (0 when either is empty)."""
    if len(new_turn) == 0 or len(old_turn) == 0:
        return 0.0
    return float((np.asarray(new_turn) @ np.asarray(old_turn).T).max(1).mean())


def turn_ranks(overlaps: dict[str, float]) -> dict[str, int]:
    """Turn id -> its rank by overlap, highest first (ties keep the order given)."""
    return {t: k for k, t in enumerate(sorted(overlaps, key=lambda t: -overlaps[t]))}


@lru_cache(maxsize=65536)
def _words(s: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(s.lower()) if w not in _STOP and len(w) > 2)


@lru_cache(maxsize=65536)
def _names(s: str) -> frozenset[str]:
    return frozenset(_NAME.findall(s))


@lru_cache(maxsize=65536)  # one fact meets many partners: its cue features are computed once
def _side(f: FactView) -> tuple[float, ...]:
    from induction.offline import PREFERENCE, plain

    s = plain(f.statement)
    return (float(f.holder == "user"), float(f.holder in EVIDENCE_HOLDERS), *[float(f.kind == k) for k in KINDS],
            float(f.change), float(f.negation), float(f.scoped), float(bool(PREFERENCE.search(s))),
            float(bool(PAST_STATE.search(s))), float(bool(_CONTRAST.search(s))), float(bool(_NOW.search(s))),
            min(3.0, float(len(EVIDENCE_CUE.findall(s)))), float(f.turn_change or f.change),
            float(not holds_state(f.statement)), float(bool(FINE_OUTCOME.search(s))))


_SIDE_NAMES = ["user", "evidence", *[f"kind_{k}" for k in KINDS], "change", "negation", "scoped", "pref_cue",
               "past_state_cue", "contrast_cue", "now_cue", "evidence_cues", "turn_change", "no_state", "fine_outcome"]
STRUCT_NAMES: tuple[str, ...] = (
    "sim", "sim2", "rank_frac", "same_holder", "same_kind", "neg_xor", "same_concept", "near_concept", "in_session",
    "word_jaccard", "name_overlap", "name_new_only", "turn_sim", "turn_rank_frac", "turn_top",
    *[f"new_{n}" for n in _SIDE_NAMES], *[f"old_{n}" for n in _SIDE_NAMES])


def struct_features(new: FactView, old: FactView, ctx: PairContext) -> np.ndarray:
    wa, wb = _words(new.statement), _words(old.statement)
    na, nb = _names(new.statement), _names(old.statement)
    jac = len(wa & wb) / max(1, len(wa | wb))
    head = [ctx.similarity, ctx.similarity ** 2, ctx.rank / max(1, ctx.n_candidates), float(new.holder == old.holder),
            float(new.kind == old.kind), float(new.negation != old.negation), float(ctx.same_concept),
            float(ctx.near_concept), float(ctx.in_session), jac, float(bool(na & nb)), float(bool(na - nb)),
            ctx.turn_sim, ctx.turn_rank / max(1, ctx.n_turns), float(ctx.turn_rank == 0)]
    return np.asarray([*head, *_side(new), *_side(old)], dtype=np.float32)


def pair_features(new: FactView, old: FactView, ctx: PairContext, u: np.ndarray | None, v: np.ndarray | None,
                  pair_embedding: bool) -> np.ndarray:
    """The full input row: structural features, then (optionally) ``u * v`` and ``|u - v|``."""
    s = struct_features(new, old, ctx)
    if not pair_embedding:
        return s
    if u is None or v is None:
        raise ValueError("pair_embedding needs both sentence vectors")
    u32, v32 = np.asarray(u, dtype=np.float32), np.asarray(v, dtype=np.float32)
    return np.concatenate([s, u32 * v32, np.abs(u32 - v32)])
