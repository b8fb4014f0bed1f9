"""A fast reader on the shipped MiniLM that reads the Reasoning State per memory line (issue 48 item 1).

Why a second one: the cross-encoder (``policy/xreader.py``) reruns MiniLM over request + memory + state for
every option and condition, ~0.5 s of CPU a sample with its backward pass; on the shared 2-core box (load
15) that was ~4 s a sample, ~30 optimizer steps in 23 minutes, and its loss did not move. Here MiniLM is
frozen and reads each text once (mean-pooled, normalised sentence vectors, cached): every option, the
request, each rendered memory line (``retrieval.render.render_context``, with the graph's relational state:
"— expired", "superseded by ...", the date and the kind) and each RULE line. A small head, the only trained
part, reads per (option, memory line):

* the option's and the line's vectors (their product, cosine, and the line vector projected: so "expired"
  or "superseded" in the line's text counts);
* the state's line for that fact as features: whether the state names it, use / ignore, role, priority;
* the RULE lines naming the fact by alias (their vectors, projected, and whether the fact is named first),

and sums a score per option over the lines, plus an (option, request) term; P(option) = softmax. Conditions:
``none`` (no memory: the request term only), ``evidence`` (lines without state features), a state.
Nothing is truncated: every line ``render_context`` includes under ``evidence_budget`` words is read in full
(MiniLM's 256-word-piece sentence limit applies per line, longer lines are cut at the end; none in the
neutral instances). Training is ``policy/reader_tune.py``'s design (every training instance under all six
conditions each epoch: a swapped state must pick the other option), on the training split only (held-out
rows refused by label and by the 30 % row hash, ``policy.xreader.refuse_heldout``); the epoch with the best
validation score is kept.

    python -m policy.xreader_fast --config configs/reader-xfast.yaml [--set seed=1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from policy.option_scoring import OptionScoring
from policy.reader_tune import CONDITIONS, condition_state, split_val, target_index
from policy.state import PRIORITIES, ROLES, ReasoningState
from policy.xreader import base_path, load_rows, refuse_heldout
from retrieval.render import render_context
from retrieval.retrieve import EvidenceBundle
from training_data.base import TrainingInstance

XFAST_VERSION = "xreader-fast-v1"
XFAST_ARTEFACT = "policy/artefact/xreader-fast-v1"
TAG_DIM = 1 + 2 + len(ROLES) + len(PRIORITIES)
_LINE = re.compile(r"^\[(F\d+)\]\s*(.*)$")
_ALIAS = re.compile(r"\bF\d+\b")


class XFastConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "reader-xfast"
    output_dir: str = "runs/reader-xfast"
    artefact: str | None = None
    train_path: str | list[str] = Field(default="runs/neutral/train.jsonl", description="A JSONL or a list of them.")
    val_fraction: float = Field(default=0.1, gt=0, lt=1)
    seed: int = 0
    epochs: int = Field(default=60, ge=1)
    batch: int = Field(default=32, ge=1)
    learning_rate: float = 2e-3
    hidden: int = 64
    proj: int = 32
    evidence_budget: int = 400
    graph_state: bool = Field(default=True, description="Render the graph's relational state on the memory lines "
                              "(expired, superseded by ...); False: the Reasoning State is the only carrier of it.")
    text_only: bool = Field(default=False, description="Memory lines are the statements alone (no date, holder "
                            "or graph mark): the reader reads what was said, the state tells it which to go by "
                            "(training_data.state_decides). Implies graph_state False.")
    weights: dict[str, float] = Field(default_factory=lambda: {c: 1.0 for c in CONDITIONS})
    num_threads: int = 1


class Encoder:
    """Frozen MiniLM sentence vectors (mean-pooled, L2-normalised), cached by text."""

    def __init__(self, base: str | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(base or base_path())
        self.model = AutoModel.from_pretrained(base or base_path()).eval()
        self.cache: dict[str, np.ndarray] = {}
        self._torch = torch

    def __call__(self, texts: Sequence[str]) -> list[np.ndarray]:
        torch = self._torch
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for i in range(0, len(todo), 32):
            chunk = todo[i:i + 32]
            enc = self.tok(chunk, truncation=True, max_length=256, padding=True, return_tensors="pt")
            with torch.no_grad():
                h = self.model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            v = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1.0), dim=1).numpy()
            for t, row in zip(chunk, v):
                self.cache[t] = row.astype(np.float32)
        return [self.cache[t] for t in texts]


def tag_features(state: ReasoningState | None, alias: str) -> np.ndarray:
    x = np.zeros(TAG_DIM, np.float32)
    f = next((f for f in state.facts if f.alias == alias), None) if state is not None else None
    if f is not None:
        x[0] = 1.0
        x[1 if f.use else 2] = 1.0
        x[3 + ROLES.index(f.role)] = 1.0
        x[3 + len(ROLES) + PRIORITIES.index(f.priority)] = 1.0
    return x


def memory_lines(bundle: EvidenceBundle, budget: int, graph_state: bool = True,
                 text_only: bool = False) -> list[tuple[str, str]]:
    """(alias, line text without its alias) for every memory line the render includes, best units first;
    ``text_only``: the fact's statement alone (no date, holder, relation or validity mark)."""
    out = []
    statement = {it.alias: it.fact.statement for it in bundle.items}
    for line in render_context(bundle, budget=budget, with_state=graph_state and not text_only,
                               style="full").text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append((m.group(1), statement.get(m.group(1), m.group(2)) if text_only else m.group(2)))
    return out


def featurize(enc: Encoder, request: str, bundle: EvidenceBundle, choices: Sequence[str],
              shown: ReasoningState | str, budget: int, graph_state: bool = True,
              text_only: bool = False) -> dict[str, np.ndarray]:
    """Arrays for one (instance, condition): options (k, d), request (d), lines (n, d), tags (n, TAG_DIM),
    rule vectors per line (n, d) and rule flags per line (n, 2)."""
    lines = [] if shown == "none" else memory_lines(bundle, budget, graph_state, text_only)
    state = shown if isinstance(shown, ReasoningState) else None
    rules = list(state.rules) if state is not None else []
    vecs = enc(list(choices) + [request] + [t for _, t in lines] + rules)
    k, n = len(choices), len(lines)
    opt, req, lv, rv = np.stack(vecs[:k]), vecs[k], vecs[k + 1:k + 1 + n], vecs[k + 1 + n:]
    d = opt.shape[1]
    rule_vec = np.zeros((n, d), np.float32)
    flags = np.zeros((n, 2), np.float32)
    for j, (alias, _) in enumerate(lines):
        named = [(r, v) for r, v in zip(rules, rv) if alias in _ALIAS.findall(r)]
        if named:
            rule_vec[j] = np.mean([v for _, v in named], 0)
            flags[j] = (1.0, float(any(_ALIAS.findall(r)[0] == alias for r, _ in named)))
    return {"opt": opt, "req": np.asarray(req), "lines": np.stack(lv) if n else np.zeros((0, d), np.float32),
            "tags": np.stack([tag_features(state, a) for a, _ in lines]) if n else np.zeros((0, TAG_DIM), np.float32),
            "rule_vec": rule_vec, "rule_flags": flags}


def build_head(d: int, hidden: int, proj: int) -> Any:
    import torch

    nn = torch.nn

    class Head(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.p_line = nn.Linear(d, proj)
            self.p_rule = nn.Linear(d, proj)
            self.pair = nn.Sequential(nn.Linear(d + 1 + proj + TAG_DIM + proj + 2, hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))
            self.req = nn.Sequential(nn.Linear(d + 1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, x: dict[str, Any]) -> Any:
            """(k,) option scores of one sample; ``forward_batch`` of a batch of one."""
            b = {key: v[None] for key, v in x.items()}
            b["mask"] = torch.ones(1, x["lines"].shape[0])
            return self.forward_batch(b)[0]

        def forward_batch(self, x: dict[str, Any]) -> Any:
            """(B, k) option scores; lines padded to N with ``mask`` (B, N)."""
            opt, lines, mask = x["opt"], x["lines"], x["mask"]  # (B, k, d), (B, N, d), (B, N)
            q = x["req"][:, None].expand_as(opt)
            score = self.req(torch.cat([opt * q, (opt * q).sum(-1, keepdim=True)], -1))[..., 0]
            B, k, n = opt.shape[0], opt.shape[1], lines.shape[1]
            if n == 0:
                return score
            o = opt[:, :, None].expand(B, k, n, -1)
            ln = lines[:, None].expand(B, k, n, -1)
            ctx = torch.cat([self.p_line(lines), x["tags"], self.p_rule(x["rule_vec"]), x["rule_flags"]], -1)
            z = torch.cat([o * ln, (o * ln).sum(-1, keepdim=True), ctx[:, None].expand(B, k, n, -1)], -1)
            return score + (self.pair(z)[..., 0] * mask[:, None]).sum(-1)

    return Head()


def collate(feats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Stack samples with the same number of options; memory lines padded (``mask``)."""
    import torch

    n = max(int(f["lines"].shape[0]) for f in feats)
    out: dict[str, Any] = {"opt": torch.stack([f["opt"] for f in feats]), "req": torch.stack([f["req"] for f in feats])}
    for key in ("lines", "tags", "rule_vec", "rule_flags"):
        out[key] = torch.stack([torch.nn.functional.pad(f[key], (0, 0, 0, n - f[key].shape[0])) for f in feats])
    out["mask"] = torch.stack([(torch.arange(n) < f["lines"].shape[0]).float() for f in feats])
    return out


def _tensors(f: dict[str, np.ndarray]) -> dict[str, Any]:
    import torch

    return {k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in f.items()}


class XFastReader(OptionScoring):
    """``option_logprobs`` (log-softmax over the options); ``graded`` / ``answer_text`` from ``OptionScoring``."""

    def __init__(self, head: Any, encoder: Encoder, evidence_budget: int = 400, name: str = XFAST_VERSION,
                 graph_state: bool = True, text_only: bool = False):
        self.head, self.enc, self.evidence_budget, self.graph_state = head, encoder, evidence_budget, graph_state
        self.text_only = text_only
        self.name = f"{name}:ev{evidence_budget}" + ("" if graph_state else ":nograph") + (":text" if text_only else "")
        self.truncated = 0

    def option_logprobs(self, request: str, bundle: EvidenceBundle, choices: Sequence[str],
                        state: ReasoningState | str) -> list[float]:
        import torch

        x = _tensors(featurize(self.enc, request, bundle, choices, state, self.evidence_budget, self.graph_state,
                               self.text_only))
        with torch.no_grad():
            return [float(v) for v in torch.log_softmax(self.head(x), 0)]

    def save(self, folder: str | Path, manifest: dict[str, Any]) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(folder / "weights.npz", **{k: v.detach().numpy().astype(np.float16)  # type: ignore[arg-type]
                                                        for k, v in self.head.state_dict().items()})
        manifest = {**manifest, "version": XFAST_VERSION, "evidence_budget": self.evidence_budget,
                    "weights_sha256": hashlib.sha256((folder / "weights.npz").read_bytes()).hexdigest()[:16]}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")

    @classmethod
    def load(cls, folder: str | Path = XFAST_ARTEFACT, base: str | None = None) -> XFastReader:
        """Offline (the base is the installed MiniLM package); ValueError if the probe is not reproduced."""
        import torch

        folder = Path(folder)
        man = json.loads((folder / "manifest.json").read_text())
        if man.get("version") != XFAST_VERSION:
            raise ValueError(f"{folder}: not an {XFAST_VERSION} artefact")
        cfg = man["config"]
        head = build_head(int(man["dim"]), int(cfg["hidden"]), int(cfg["proj"]))
        with np.load(folder / "weights.npz") as z:
            head.load_state_dict({k: torch.from_numpy(np.asarray(z[k]).astype(np.float32)) for k in z.files})
        head.eval()
        r = cls(head, Encoder(base), evidence_budget=int(man["evidence_budget"]), graph_state=bool(cfg.get("graph_state", True)),
                text_only=bool(cfg.get("text_only", False)))
        probe = man.get("probe")
        if probe:
            got = r.enc([probe["text"]])[0]
            if float(np.abs(got - np.asarray(probe["vector"], np.float32)).max()) > 0.01:
                raise ValueError(f"{folder}: probe not reproduced; the base package is not the one it was trained on")
        return r


def load_any(folder: str | Path) -> Any:
    """The reader an artefact folder holds: the fast reader (this module) or the cross-encoder
    (``policy.xreader``), by its manifest's version; None when the folder holds neither."""
    from policy.xreader import XREADER_VERSION, XReader

    f = Path(folder) / "manifest.json"
    version = json.loads(f.read_text()).get("version") if f.is_file() else None
    if version == XFAST_VERSION:
        return XFastReader.load(folder)
    if version == XREADER_VERSION:
        return XReader.load(folder)
    return None


def is_minilm_reader(folder: str | Path) -> bool:
    f = Path(folder) / "manifest.json"
    return f.is_file() and json.loads(f.read_text()).get("version") in (XFAST_VERSION, "xreader-minilm-v1")


def train_xfast(cfg: XFastConfig, command: str = "") -> dict[str, Any]:
    import torch

    t0 = time.time()
    torch.set_num_threads(cfg.num_threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    paths = [cfg.train_path] if isinstance(cfg.train_path, str) else list(cfg.train_path)
    rows = [r for p in paths for r in load_rows(p) if r.choices]
    refuse_heldout(rows)
    train, val = split_val(rows, cfg.val_fraction)
    enc = Encoder()
    conds = [c for c in CONDITIONS if cfg.weights.get(c, 0) > 0]

    def samples(insts: Sequence[TrainingInstance], cs: Sequence[str]) -> list[tuple[dict[str, Any], int, str, float]]:
        out = []
        for inst in insts:
            assert inst.choices
            for c in cs:
                shown, right = condition_state(inst, c)
                f = featurize(enc, inst.request, inst.bundle(), inst.choices, shown, cfg.evidence_budget, cfg.graph_state,
                              cfg.text_only)
                out.append((_tensors(f), target_index(inst, right), c, cfg.weights.get(c, 1.0)))
        return out

    tr = samples(train, conds)
    va = samples(val, ("evidence", "oracle", "wrong"))
    t_feat = round(time.time() - t0, 1)
    d = int(tr[0][0]["opt"].shape[1])
    head = build_head(d, cfg.hidden, cfg.proj)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.learning_rate, weight_decay=0.01)

    def validate() -> dict[str, float]:
        head.eval()
        res: dict[str, float] = {}
        with torch.no_grad():
            for c in ("evidence", "oracle", "wrong"):
                ps = [float(torch.softmax(head(x), 0)[t]) for x, t, cc, _ in va if cc == c]
                accs = [float(int(head(x).argmax()) == t) for x, t, cc, _ in va if cc == c]
                res[f"{c}/p"], res[f"{c}/acc"] = sum(ps) / len(ps), sum(accs) / len(accs)
        res["score"] = sum(res[f"{c}/p"] for c in ("evidence", "oracle", "wrong")) / 3
        return res

    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    best = validate()
    best_epoch, history = 0, [{"epoch": 0, **best}]
    best_state = {k: v.clone() for k, v in head.state_dict().items()}
    for epoch in range(1, cfg.epochs + 1):
        head.train()
        order = list(range(len(tr)))
        rng.shuffle(order)
        total = 0.0
        for s in range(0, len(order), cfg.batch):
            idx = order[s:s + cfg.batch]
            by_k: dict[int, list[int]] = {}
            for i in idx:
                by_k.setdefault(int(tr[i][0]["opt"].shape[0]), []).append(i)
            opt.zero_grad()
            loss = torch.zeros(())
            for ids in by_k.values():
                lp = torch.log_softmax(head.forward_batch(collate([tr[i][0] for i in ids])), -1)
                tgt = torch.tensor([tr[i][1] for i in ids])
                w = torch.tensor([tr[i][3] for i in ids])
                loss = loss - (lp.gather(1, tgt[:, None])[:, 0] * w).sum()
            (loss / len(idx)).backward()
            opt.step()
            total += float(loss.detach())
        v = validate()
        history.append({"epoch": epoch, "loss": round(total / len(tr), 4), **v})
        if v["score"] > best["score"]:
            best, best_epoch = v, epoch
            best_state = {k: x.clone() for k, x in head.state_dict().items()}
    head.load_state_dict(best_state)
    head.eval()
    reader = XFastReader(head, enc, cfg.evidence_budget, graph_state=cfg.graph_state, text_only=cfg.text_only)
    probe_text = train[0].request
    manifest = {"name": cfg.name, "config": cfg.model_dump(), "command": command, "best_epoch": best_epoch,
                "val": best, "val_history": history, "dim": d,
                "probe": {"text": probe_text, "vector": [round(float(x), 5) for x in enc([probe_text])[0]]},
                "data": {"path": cfg.train_path, "sha256": hashlib.sha256(b"".join(Path(p).read_bytes() for p in paths)).hexdigest(),
                         "train_rows": len(train), "val_rows": len(val), "samples": len(tr)},
                "seconds": {"features": t_feat, "total": round(time.time() - t0, 1)}}
    reader.save(out / "best", manifest)
    if cfg.artefact:
        reader.save(cfg.artefact, manifest)
    (out / "history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    return {"output_dir": str(out), "best_epoch": best_epoch, "val": best, "seconds": manifest["seconds"],
            "artefact": cfg.artefact}


def main(argv: list[str] | None = None) -> int:
    from policy.config import apply_overrides, load_preset

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None)
    ap.add_argument("--set", nargs="*", default=[])
    ns = ap.parse_args(argv)
    cfg = (load_preset(ns.config, XFastConfig, list(ns.set), family="reader") if ns.config
           else XFastConfig.model_validate(apply_overrides(XFastConfig().model_dump(), list(ns.set))))
    print(json.dumps(train_xfast(cfg, command=" ".join(["python -m policy.xreader_fast"] + (argv or [])))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["XFAST_ARTEFACT", "XFAST_VERSION", "XFastConfig", "XFastReader", "featurize", "is_minilm_reader", "load_any", "memory_lines", "tag_features",
           "train_xfast"]
