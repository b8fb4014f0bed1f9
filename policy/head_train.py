"""Distilling the shipped per-fact policy into ``policy/head.py``'s head: teacher labels, fit, agreement.

    # 1. the shipped adapter's greedy lines (policy/fastfact.py) on training rows, cached (resumable)
    python -m policy.head_train label --data DIR/train.jsonl ... --out labels.jsonl
    # 2. fit the head on them (a share of the rows, chosen by a hash of their id, is kept out for agreement)
    python -m policy.head_train fit --data DIR/train.jsonl ... --labels labels.jsonl --out policy/artefact/head-v1
    # 3. agreement of a head with the teacher on labelled rows (e.g. rows of other builds)
    python -m policy.head_train agree --data FILE.jsonl ... --labels labels.jsonl [--head DIR] [--states-out S]

Only ``train.jsonl`` files are accepted for labelling and fitting: a held-out row is never a teacher example
(``agree`` only measures, on any rows, e.g. the adapter's states on held-out rows from ``bench/policy_fast.py
--states-out``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policy.head import FEATURES_VERSION, HeadPolicy, embed_texts, features, head_dir, save_head, structure


def _train_files(paths: Sequence[str]) -> list[Path]:
    out = [Path(p) for p in paths]
    for p in out:
        if p.name != "train.jsonl":
            raise SystemExit(f"{p}: only train.jsonl files may be labelled or fitted on (held-out rows never are)")
    return out


def read_rows(paths: Sequence[str], train_only: bool = True) -> list[Any]:
    from training_data.base import TrainingInstance

    files = _train_files(paths) if train_only else [Path(p) for p in paths]
    return [TrainingInstance.model_validate_json(x) for p in files for x in p.read_text().splitlines() if x.strip()]


def read_labels(path: str | Path) -> dict[str, list[str]]:
    """Teacher lines per instance: ``label``'s output, or states (``{instance_id, state}``, as
    ``bench/policy_fast.py --states-out`` writes them) split into their lines."""
    from policy.perfact import fact_line_text

    out = {}
    for r in map(json.loads, filter(str.strip, Path(path).read_text().splitlines())):
        out[r["instance_id"]] = r["lines"] if "lines" in r else [fact_line_text(x) for x in r["state"].splitlines()]
    return out


def in_fit(instance_id: str, eval_share: float) -> bool:
    """The row-hash split between fitting and agreement rows.

    >>> in_fit("memsyco:x", 0.0)
    True
    """
    h = int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h >= eval_share


def label(ns: argparse.Namespace) -> int:
    from policy.fastfact import FastFactPolicy
    from policy.learned import LocalLearnedPolicy
    from policy.shipped import shipped_policy_dir

    out = Path(ns.out)
    done = set(read_labels(out)) if out.exists() else set()
    teacher = LocalLearnedPolicy.from_checkpoint(ns.teacher or str(shipped_policy_dir()), temperature=0.0)
    fast = FastFactPolicy(teacher)
    for inst in read_rows(ns.data):
        if inst.instance_id in done:
            continue
        b, t0 = inst.bundle(), time.perf_counter()
        lines = fast.line_texts(inst.request, b, inst.choices)
        with out.open("a") as fh:  # row by row: a long run on a shared box keeps what it finished
            fh.write(json.dumps({"instance_id": inst.instance_id, "aliases": [it.alias for it in b.items],
                                 "lines": lines}) + "\n")
        print(inst.instance_id, len(lines), f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return 0


def design(rows: Sequence[Any], labels: dict[str, list[str]], embedder: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """Feature rows, teacher lines and owning instance ids for every labelled fact of ``rows``."""
    xs, ys, owners = [], [], []
    for inst in rows:
        lines = labels.get(inst.instance_id)
        if lines is None:
            continue
        b = inst.bundle()
        if len(lines) != len(b.items):
            raise ValueError(f"{inst.instance_id}: {len(lines)} labels for {len(b.items)} facts")
        vecs = np.asarray(embedder.embed(embed_texts(inst.request, b)), dtype=np.float32)
        xs.append(features(vecs[0], vecs[1:], b, inst.choices))
        ys += [x.strip() for x in lines]
        owners += [inst.instance_id] * len(lines)
    return np.concatenate(xs, 0), ys, owners


def fit_weights(x: np.ndarray, y: Sequence[str], *, l2: float = 1e-3, steps: int = 300,
                seed: int = 0) -> tuple[dict[str, np.ndarray], list[str]]:
    """Multinomial logistic regression (full batch, L-BFGS) on standardised features."""
    import torch

    torch.manual_seed(seed)
    classes = sorted(set(y))
    mean = x.mean(0)
    scale = x.std(0) + 1e-3
    xt = torch.tensor((x - mean) / scale, dtype=torch.float32)
    yt = torch.tensor([classes.index(c) for c in y])
    w = torch.zeros((x.shape[1], len(classes)), requires_grad=True)
    b = torch.zeros(len(classes), requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(xt @ w + b, yt) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return {"mean": mean, "scale": scale, "W": w.detach().numpy(), "b": b.detach().numpy()}, classes


def columns(kind: str, n_struct: int, width: int) -> np.ndarray:
    """Feature columns a head is fitted on (the others get zero weight): ``struct`` (the record's marks),
    ``struct+sim`` (and the request-fact cosine features), ``all`` (and the embeddings)."""
    return {"struct": np.arange(n_struct), "struct+sim": np.arange(n_struct + 4),
            "all": np.arange(width)}[kind]


def expand(weights: dict[str, np.ndarray], cols: np.ndarray, width: int) -> dict[str, np.ndarray]:
    """Weights fitted on ``cols`` as weights over every feature (zero elsewhere)."""
    mean, scale = np.zeros(width, np.float32), np.ones(width, np.float32)
    w = np.zeros((width, weights["W"].shape[1]), np.float32)
    mean[cols], scale[cols], w[cols] = weights["mean"], weights["scale"], weights["W"]
    return {"mean": mean, "scale": scale, "W": w, "b": weights["b"]}


def agreement(pred: Sequence[str], gold: Sequence[str], owners: Sequence[str]) -> dict[str, Any]:
    facts = sum(p == g for p, g in zip(pred, gold))
    per: dict[str, bool] = {}
    for p, g, o in zip(pred, gold, owners):
        per[o] = per.get(o, True) and p == g
    use = sum(p.split(" | ")[1] == g.split(" | ")[1] for p, g in zip(pred, gold))
    return {"facts": len(gold), "same_line": round(facts / max(len(gold), 1), 4),
            "same_use": round(use / max(len(gold), 1), 4),
            "rows": len(per), "rows_all_same": round(sum(per.values()) / max(len(per), 1), 4)}


def fit(ns: argparse.Namespace) -> int:
    from llmclients.embeddings import EmbedderConfig, make_embedder

    labels: dict[str, list[str]] = {}
    for p in ns.labels:
        labels.update(read_labels(p))
    rows = read_rows(ns.data)
    emb = make_embedder(EmbedderConfig())
    x, y, owners = design(rows, labels, emb)
    keep = np.array([in_fit(o, ns.eval_share) for o in owners])
    cols = columns(ns.columns, structure(rows[0].bundle(), None).shape[1], x.shape[1])
    fitted, classes = fit_weights(x[keep][:, cols], [c for c, k in zip(y, keep) if k], l2=ns.l2, seed=ns.seed)
    weights = expand(fitted, cols, x.shape[1])
    from policy.head import Head

    head = Head(weights, classes)
    report = {"fit": agreement(head.lines(x[keep]), [c for c, k in zip(y, keep) if k],
                               [o for o, k in zip(owners, keep) if k])}
    if (~keep).any():
        report["agreement_rows_not_fitted"] = agreement(head.lines(x[~keep]), [c for c, k in zip(y, keep) if not k],
                                                        [o for o, k in zip(owners, keep) if not k])
    report["teacher_lines"] = dict(Counter(y).most_common())
    manifest = {"name": Path(ns.out).name, "features": FEATURES_VERSION, "classes": classes,
                "teacher": ns.teacher_name, "columns": ns.columns, "l2": ns.l2, "eval_share": ns.eval_share, "seed": ns.seed,
                "data": {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in ns.data},
                "labels": {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in ns.labels},
                "report": report, "reproduce": " ".join(["python -m policy.head_train", *sys.argv[1:]])
                if ns.reproduce is None else ns.reproduce}
    save_head(ns.out, weights, manifest)
    print(json.dumps(report, indent=1))
    return 0


def agree(ns: argparse.Namespace) -> int:
    """Agreement on any rows (held-out ones too: this only measures); ``--states-out`` writes the head's states
    for ``bench/policy_reader.py --states``."""
    labels: dict[str, list[str]] = {}
    for p in ns.labels:
        labels.update(read_labels(p))
    pol = HeadPolicy(ns.head)
    rows = [r for r in read_rows(ns.data, train_only=False) if r.instance_id in labels]
    x, y, owners = design(rows, labels, pol.embedder)
    pred = pol.head.lines(x)
    print(json.dumps(agreement(pred, y, owners), indent=1))
    if ns.states_out:
        with open(ns.states_out, "w") as fh:
            for inst in rows:
                lines = [p for p, o in zip(pred, owners) if o == inst.instance_id]
                state = "\n".join(f"{it.alias}: {ln}" for it, ln in zip(inst.bundle().items, lines))
                fh.write(json.dumps({"instance_id": inst.instance_id, "state": state}) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("label", help="Teacher lines on training rows (cached, resumable).")
    a.add_argument("--data", nargs="+", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--teacher", default=None, help="Policy checkpoint (default: the shipped one).")
    f = sub.add_parser("fit", help="Fit the head on teacher lines and write the artefact.")
    f.add_argument("--data", nargs="+", required=True)
    f.add_argument("--labels", nargs="+", required=True)
    f.add_argument("--out", default=str(head_dir()))
    f.add_argument("--eval-share", type=float, default=0.2, help="Rows (by id hash) kept out for agreement.")
    f.add_argument("--l2", type=float, default=1e-3)
    f.add_argument("--columns", choices=("struct", "struct+sim", "all"), default="struct+sim")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--teacher-name", default="smollm2-read-v1 (policy/fastfact.py, greedy)")
    f.add_argument("--reproduce", default=None, help="The command recorded in the manifest (default: this one).")
    g = sub.add_parser("agree", help="Agreement of a head with teacher lines.")
    g.add_argument("--data", nargs="+", required=True)
    g.add_argument("--labels", nargs="+", required=True)
    g.add_argument("--head", default=None)
    g.add_argument("--states-out", default=None, help="Write the head's states (JSONL of instance_id/state).")
    ns = ap.parse_args(argv)
    return {"label": label, "fit": fit, "agree": agree}[ns.cmd](ns)


if __name__ == "__main__":
    sys.exit(main())
