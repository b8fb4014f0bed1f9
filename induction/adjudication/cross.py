"""The cross kind's part of the model adjudicator (``RelationModelConfig.kind="cross"``).

The cross-encoder (induction/relations/cross.py) reads the new statement together with each candidate's, which
costs a transformer layer per pair; so a cheap screen first ranks the candidates — the shipped logistic
model's P(related) over the same structural features — and only the screen's top ``cross_top_k`` at or above
``cross_screen_floor`` are read together; the others count as unrelated. The adjudicator
(induction/adjudication/model.py) calls these functions; the decisions after the probabilities are the same
for every kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from induction.config import RelationModelConfig
from induction.relations.features import LABELS, STRUCT_NAMES
from induction.relations.model import ARTEFACT_DIR, DEFAULT_NAME, RelationModel


def load_cross(cfg: RelationModelConfig, embedder: Any = None) -> tuple[Any, RelationModelConfig, RelationModel | None]:
    """The cross model, ``cfg`` with the cross kind's own thresholds (the manifest's, chosen on the phrasing tuning
    half, unless ``cross_thresholds`` says otherwise), and the screen (None when the shipped logistic artefact
    cannot be loaded: candidates are then read closest first). With ``cross_tap`` the model takes its lower states
    from ``embedder``'s own pass (``CrossRelationModel.tap``). Raises as ``CrossRelationModel.load``."""
    from induction.relations.cross import CROSS_NAME, CrossRelationModel

    cross = CrossRelationModel.load(cfg.artefact_dir or ARTEFACT_DIR, cfg.artefact_name or CROSS_NAME)
    if cfg.cross_tap and embedder is not None:
        cross.tap(embedder)
    th = cfg.cross_thresholds or cross.manifest.get("thresholds")
    if th:
        cfg = cfg.model_copy(update={"supersede_threshold": float(th[0]), "conflict_threshold": float(th[1]),
                                     "same_holder_conflict_threshold": float(th[2])})
    try:
        screen: RelationModel | None = RelationModel.load(ARTEFACT_DIR, DEFAULT_NAME)
    except (FileNotFoundError, ValueError):
        screen = None
    return cross, cfg, screen


_SAME, _NEW_EV, _OLD_EV = (STRUCT_NAMES.index(n) for n in ("same_holder", "new_evidence", "old_evidence"))


def edge_possible(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` whose pair graph.rules could join at all: one holder (``may_supersede`` and a person's own
    conflict), or a person against outside evidence (``may_conflict``). Two different people, or two pieces of
    evidence, never get an edge whatever the model reads (``RelationModelConfig.cross_holder_screen``)."""
    X = np.asarray(X)
    if len(X) == 0:
        return np.zeros(0, bool)
    return (X[:, _SAME] > 0.5) | ((X[:, _NEW_EV] > 0.5) != (X[:, _OLD_EV] > 0.5))


def kept(screen: RelationModel | None, cfg: RelationModelConfig, X: np.ndarray) -> np.ndarray:
    """Indices of the candidates (rows of ``X``) the cross pass reads: of the pairs the rules could join
    (``edge_possible``, when ``cross_holder_screen``), the screen's top ``cross_top_k`` at or above
    ``cross_screen_floor``."""
    if cfg.cross_holder_screen and len(X):
        ok = np.flatnonzero(edge_possible(X))
        return ok[kept(screen, cfg.model_copy(update={"cross_holder_screen": False}), X[ok])] if len(ok) else ok
    keep = np.arange(len(X))
    if cfg.cross_top_k or cfg.cross_screen_floor > 0:
        if screen is not None:
            s = 1.0 - screen.predict_proba(X[:, : screen.n_features])[:, 0]
        else:  # candidates come closest first
            s = np.linspace(1.0, 0.5, len(X))
        keep = np.argsort(-s, kind="stable")
        if cfg.cross_top_k:
            keep = keep[: cfg.cross_top_k]
        keep = np.sort(keep[s[keep] >= cfg.cross_screen_floor])
    return keep


def cross_probabilities(model: Any, screen: RelationModel | None, cfg: RelationModelConfig, statement: str,
                        olds: Sequence[str], X: np.ndarray) -> np.ndarray:
    """(len(olds), len(LABELS)) probabilities: the kept candidates read together with ``statement``, the others
    unrelated."""
    keep = kept(screen, cfg, X)
    P = np.zeros((len(olds), len(LABELS)), np.float32)
    P[:, 0] = 1.0
    if len(keep):
        P[keep] = model.predict_pairs([statement] * len(keep), [olds[int(k)] for k in keep], X[keep])
    return P


def prefetch(model: Any, screen: RelationModel | None, cfg: RelationModelConfig,
             rows: Sequence[tuple[str, Sequence[str], np.ndarray]]) -> None:
    """Read the lower states of every statement the cross pass will read (``rows``: a new statement, its
    candidates' statements and their features) in one batch, shortest first (less padding)."""
    texts: list[str] = []
    for statement, olds, X in rows:
        keep = kept(screen, cfg, X) if len(olds) else np.zeros(0, np.int64)
        if len(keep):
            texts += [statement] + [olds[int(k)] for k in keep]
    model._lower(sorted(dict.fromkeys(texts), key=len))
