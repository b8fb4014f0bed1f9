"""The relation model: a small numpy classifier over pair features, its artefact and its training loop.

Architecture (chosen by the k-fold numbers in docs/results/relations.md): standardized pair features
(induction/relations/features.py) -> one hidden layer (ReLU) or none (multinomial logistic
regression) -> softmax over ``LABELS``. Training is full-batch Adam with L2 and class-balanced
weights, fully determined by the seed. The artefact is one ``.npz`` (weights, feature mean/std) plus a
manifest JSON (labels, feature names, config, data hash, validation metrics); inference needs numpy
only, so loading it costs milliseconds and no framework.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from induction.relations.features import LABELS

ARTEFACT_DIR = Path(__file__).parent / "artefact"
DEFAULT_NAME = "relations-v1"
# A fixed sentence whose vector the manifest keeps: at load, the embedder must reproduce it (same model).
PROBE = "I used to love jazz, but these days I mostly listen to techno."


@dataclass
class RelationModel:
    """Weights of a trained relation model (``W1``/``b1`` absent for the logistic variant)."""

    mean: np.ndarray
    std: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    W1: np.ndarray | None = None
    b1: np.ndarray | None = None
    # Optional projection of the pair-vector block (the columns after the structural ones) onto its top
    # principal directions: 768 raw dimensions let the model memorise the training rows' topics.
    proj: np.ndarray | None = None
    proj_mean: np.ndarray | None = None
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def pair_embedding(self) -> bool:
        return bool(self.manifest.get("config", {}).get("pair_embedding", False))

    @property
    def n_features(self) -> int:
        if self.proj is None:
            return int(self.mean.shape[0])
        return int(self.mean.shape[0]) - int(self.proj.shape[1]) + int(self.proj.shape[0])

    def _project(self, X: np.ndarray) -> np.ndarray:
        if self.proj is None or self.proj_mean is None:
            return X
        s = X.shape[1] - self.proj.shape[0]
        return np.concatenate([X[:, :s], (X[:, s:] - self.proj_mean) @ self.proj], axis=1)

    def _logits(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        Z = (self._project(X) - self.mean) / self.std
        if self.W1 is None or self.b1 is None:
            return Z @ self.W2 + self.b2, None
        H = np.maximum(0.0, Z @ self.W1 + self.b1)
        return H @ self.W2 + self.b2, H

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, len(LABELS)) class probabilities."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected (n, {self.n_features}) features, got {X.shape}")
        return _softmax(self._logits(X)[0])

    def save(self, folder: str | Path, name: str = DEFAULT_NAME) -> tuple[Path, Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {"mean": self.mean, "std": self.std, "W2": self.W2, "b2": self.b2}
        if self.W1 is not None and self.b1 is not None:
            arrays.update(W1=self.W1, b1=self.b1)
        if self.proj is not None and self.proj_mean is not None:
            arrays.update(proj=self.proj, proj_mean=self.proj_mean)
        npz = folder / f"{name}.npz"
        np.savez_compressed(npz, **{k: v.astype(np.float32) for k, v in arrays.items()})  # type: ignore[arg-type]
        man = folder / f"{name}.json"
        man.write_text(json.dumps(self.manifest, indent=1, default=str) + "\n")
        return npz, man

    @classmethod
    def load(cls, folder: str | Path = ARTEFACT_DIR, name: str = DEFAULT_NAME) -> RelationModel:
        """Raises FileNotFoundError when the artefact is absent (the caller falls back to the rules)."""
        folder = Path(folder)
        with np.load(folder / f"{name}.npz") as z:
            arr = {k: np.asarray(z[k], dtype=np.float32) for k in z.files}
        manifest = json.loads((folder / f"{name}.json").read_text())
        if tuple(manifest.get("labels", ())) != LABELS:
            raise ValueError(f"artefact {name} was trained for labels {manifest.get('labels')}, not {LABELS}")
        return cls(mean=arr["mean"], std=arr["std"], W2=arr["W2"], b2=arr["b2"], W1=arr.get("W1"), b1=arr.get("b1"),
                   proj=arr.get("proj"), proj_mean=arr.get("proj_mean"), manifest=manifest)


def _softmax(L: np.ndarray) -> np.ndarray:
    L = L - L.max(axis=1, keepdims=True)
    E = np.exp(L)
    return E / E.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class FitParams:
    hidden: int = 0
    epochs: int = 300
    lr: float = 0.01
    l2: float = 1e-3
    seed: int = 0
    balance: float = 0.5  # class weight = (1/freq) ** balance
    pair_dims: int = 0  # > 0: the last ``pair_cols`` columns are projected onto their top ``pair_dims`` principal axes
    pair_cols: int = 0
    # a separate L2 on the columns after the first ``struct_cols`` (the pair vectors), which memorise personas
    pair_l2: float | None = None
    struct_cols: int = 0


def fit(X: np.ndarray, y: np.ndarray, p: FitParams, log: Any = None, sample_weight: np.ndarray | None = None) -> RelationModel:
    """Full-batch Adam on the class-weighted cross-entropy; deterministic given ``p.seed``. ``sample_weight``
    (one per row) multiplies the class weights: a small source (the phrasing set, BEAM) counts for more than
    its share of rows."""
    rng = np.random.default_rng(p.seed)
    X = np.asarray(X, dtype=np.float32)
    proj = proj_mean = None
    if p.pair_dims and p.pair_cols:
        proj, proj_mean = principal_axes(X[:, X.shape[1] - p.pair_cols:], p.pair_dims)
        X = np.concatenate([X[:, : X.shape[1] - p.pair_cols], (X[:, X.shape[1] - p.pair_cols:] - proj_mean) @ proj], axis=1)
    n, d = X.shape
    k = len(LABELS)
    mean = X.mean(axis=0)
    std = X.std(axis=0) + 1e-4
    Z = (X - mean) / std
    freq = np.bincount(y, minlength=k).astype(np.float64) / n
    cw = np.where(freq > 0, (1.0 / np.maximum(freq, 1e-9)) ** p.balance, 0.0)
    w = cw[y] if sample_weight is None else cw[y] * np.asarray(sample_weight, dtype=np.float64)
    w = (w / w.mean()).astype(np.float32)
    Y = np.eye(k, dtype=np.float32)[y]
    params: dict[str, np.ndarray] = {}
    if p.hidden:
        params["W1"] = (rng.standard_normal((d, p.hidden)) * np.sqrt(2.0 / d)).astype(np.float32)
        params["b1"] = np.zeros(p.hidden, dtype=np.float32)
        params["W2"] = (rng.standard_normal((p.hidden, k)) * np.sqrt(1.0 / p.hidden)).astype(np.float32)
    else:
        params["W2"] = np.zeros((d, k), dtype=np.float32)
    params["b2"] = np.zeros(k, dtype=np.float32)
    m = {key: np.zeros_like(v) for key, v in params.items()}
    s = {key: np.zeros_like(v) for key, v in params.items()}
    b1_, b2_ = 0.9, 0.999
    pen = np.full((d, 1), p.l2, dtype=np.float32)
    if p.pair_l2 is not None and 0 < p.struct_cols < d:
        pen[p.struct_cols:] = p.pair_l2
    for t in range(1, p.epochs + 1):
        if p.hidden:
            Hpre = Z @ params["W1"] + params["b1"]
            H = np.maximum(0.0, Hpre)
            P = _softmax(H @ params["W2"] + params["b2"])
        else:
            H, P = Z, _softmax(Z @ params["W2"] + params["b2"])
        G = (P - Y) * w[:, None] / n
        grads = {"W2": H.T @ G + (p.l2 * params["W2"] if p.hidden else pen * params["W2"]), "b2": G.sum(axis=0)}
        if p.hidden:
            GH = (G @ params["W2"].T) * (Hpre > 0)
            grads["W1"] = Z.T @ GH + pen * params["W1"]
            grads["b1"] = GH.sum(axis=0)
        for key in params:
            m[key] = b1_ * m[key] + (1 - b1_) * grads[key]
            s[key] = b2_ * s[key] + (1 - b2_) * grads[key] ** 2
            mh = m[key] / (1 - b1_ ** t)
            sh = s[key] / (1 - b2_ ** t)
            params[key] = (params[key] - p.lr * mh / (np.sqrt(sh) + 1e-8)).astype(np.float32)
        if log is not None and (t % 25 == 0 or t == p.epochs):
            loss = float(-(w * np.log(np.maximum(P[np.arange(n), y], 1e-9))).mean())
            log({"epoch": t, "train_loss": round(loss, 5)})
    return RelationModel(mean=mean.astype(np.float32), std=std.astype(np.float32), W2=params["W2"], b2=params["b2"],
                         W1=params.get("W1"), b1=params.get("b1"), proj=proj, proj_mean=proj_mean)


def principal_axes(B: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(columns, k) top-k principal axes of ``B`` and its column mean; signs fixed so a refit is identical."""
    mu = B.mean(axis=0)
    C = np.cov((B - mu).astype(np.float64), rowvar=False)
    w, V = np.linalg.eigh(C)
    V = V[:, np.argsort(-w, kind="stable")[: min(k, V.shape[1])]]
    V = V * np.where(V[np.abs(V).argmax(axis=0), np.arange(V.shape[1])] < 0, -1.0, 1.0)
    return V.astype(np.float32), mu.astype(np.float32)


def scores(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Accuracy, per-label precision/recall/F1 and the macro F1 over the labels present."""
    out: dict[str, float] = {"accuracy": round(float((y == pred).mean()) if len(y) else 0.0, 4), "n": float(len(y))}
    f1s = []
    for i, lab in enumerate(LABELS):
        tp = float(((pred == i) & (y == i)).sum())
        fp = float(((pred == i) & (y != i)).sum())
        fn = float(((pred != i) & (y == i)).sum())
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[f"{lab}/precision"], out[f"{lab}/recall"], out[f"{lab}/f1"] = round(prec, 4), round(rec, 4), round(f1, 4)
        out[f"{lab}/support"] = float((y == i).sum())
        if (y == i).any():
            f1s.append(f1)
    out["macro_f1"] = round(float(np.mean(f1s)) if f1s else 0.0, 4)
    return out
