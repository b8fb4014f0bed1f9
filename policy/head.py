"""A learned Reasoning State in milliseconds: the shipped adapter's per-fact decisions, distilled into a head.

The shipped policy (SmolLM2-135M + LoRA, ``policy_fact_v2``) answers one line per retrieved fact
(``<role> | use|ignore | high|medium|low``); even scored as a classification (``policy/fastfact.py``) a request
costs seconds on CPU, because the 135M model must read 300–400 tokens. The head reads what the pipeline
already has instead (issue 45 item 3, "distil them into a classification head"):

- structure per fact: what the record says it is (``policy.warmup.descriptive_role``, the role the adapter was
  warm-started to copy), its validity, kind, holder (the user, the assistant, a document, another person), what
  it replaces / is replaced by / conflicts with (and whose the conflict partner is), scope, its handle's rank,
  whether the request has options — only the marks the adapter's prompt spells out in words;
- meaning: the MiniLM embeddings (the retrieval embedder) of the request and of the fact's statement, their
  product and cosine, and the cosine's rank and gap within the bundle.

A multinomial logistic layer over those features picks the whole line (one class per line the teacher wrote),
trained on the shipped adapter's own greedy lines over training-split bundles (``policy/head_train.py``: teacher
labels cached, held-out rows never used). The artefact is a few hundred KB of float32 weights plus a manifest
(teacher, data, agreement, the reproducing command); it loads offline and a missing or altered file fails
loudly (``HeadArtefactMissing``). The generated form for vLLM is untouched: this is a separate policy kind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from graph.models import FACT_KINDS
from policy.perfact import assemble
from policy.state import ReasoningState, fit_state, parse_state
from policy.warmup import descriptive_role
from retrieval.retrieve import EvidenceBundle

FEATURES_VERSION = "head-features-v1"
WEIGHTS_FILE = "head.npz"
MANIFEST_FILE = "manifest.json"
ARTEFACT_NAME = "head-v1"
VALIDITIES = ("current", "superseded", "disputed", "expired", "retracted")
HOLDERS = ("user", "assistant", "document", "other")
DESCRIBED = ("current-preference", "historical", "constraint", "evidence")  # policy.warmup.descriptive_role


class HeadArtefactMissing(FileNotFoundError):
    """The head's artefact is absent, incomplete or altered (its sha256 does not match the manifest)."""


class HeadManifest(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    features: str = Field(description="The feature set the weights expect (FEATURES_VERSION).")
    classes: list[str] = Field(description="The answer lines, one per output of the head.")
    weights_sha256: str
    teacher: str = Field(description="The policy whose decisions were distilled.")
    columns: str = Field(default="all", description="Features the head was fitted on (policy/head_train.py): "
                         "struct (no embedding: the MiniLM call is skipped), struct+sim, all.")


def head_dir() -> Path:
    return Path(__file__).resolve().parent / "artefact" / ARTEFACT_NAME


def holder_class(holder: str) -> str:
    """The holder as the head sees it: the user, the assistant, a document, or another person.

    >>> holder_class(""), holder_class("assistant"), holder_class("Anna")
    ('user', 'assistant', 'other')
    """
    if holder in ("", "user"):
        return "user"
    return holder if holder in HOLDERS else "other"


def _onehot(value: str, options: Sequence[str]) -> list[float]:
    return [float(value == o) for o in options]


def structure(bundle: EvidenceBundle, choices: Sequence[str] | None) -> np.ndarray:
    """One row of structural features per fact of ``bundle`` (retrieval order)."""
    holder_of = {it.fact.fact_id: holder_class(it.fact.holder) for it in bundle.items}
    n = len(bundle.items)
    rows = []
    for rank, it in enumerate(bundle.items):
        f, s = it.fact, it.state
        own = holder_class(f.holder)
        partners = [holder_of.get(i, "user") for i in s.conflicts_with]
        row = [*_onehot(s.validity, VALIDITIES), *_onehot(f.kind, FACT_KINDS), *_onehot(own, HOLDERS),
               *_onehot(descriptive_role(it), DESCRIBED),
               float(bool(s.supersedes)), float(bool(s.superseded_by)), float(bool(s.conflicts_with)),
               min(len(s.supersedes), 3) / 3, min(len(s.conflicts_with), 3) / 3,
               *[float(h in partners) for h in HOLDERS], float(any(p != own for p in partners)),
               float(bool(s.scope)), rank / max(n - 1, 1), float(rank == 0), np.log1p(n) / 4,
               float(choices is not None)]  # only what the adapter's prompt shows (no score, seed, confidence)
        rows.append(row)
    return np.asarray(rows, dtype=np.float32)


def features(request_vec: np.ndarray, fact_vecs: np.ndarray, bundle: EvidenceBundle,
             choices: Sequence[str] | None) -> np.ndarray:
    """The head's input per fact: structure, cosine (with its rank and gap in the bundle), request and fact
    embeddings and their elementwise product. Vectors are unit-normalised MiniLM outputs."""
    r = request_vec.reshape(1, -1).astype(np.float32)
    fv = fact_vecs.astype(np.float32)
    cos = (fv @ r.T).reshape(-1)
    order = np.argsort(-cos, kind="stable")
    crank = np.empty(len(cos), dtype=np.float32)
    crank[order] = np.arange(len(cos)) / max(len(cos) - 1, 1)
    sims = np.stack([cos, crank, cos - cos.max(), (crank == 0).astype(np.float32)], 1)
    return np.concatenate([structure(bundle, choices), sims, np.repeat(r, len(fv), 0), fv, fv * r], 1)


def embed_texts(request: str, bundle: EvidenceBundle) -> list[str]:
    """What is embedded: the request, then each fact's statement."""
    return [request, *[it.fact.statement for it in bundle.items]]


class Head:
    """Standardise, then one linear layer and an arg-max over the answer lines (numpy only)."""

    def __init__(self, weights: dict[str, np.ndarray], classes: Sequence[str]):
        self.mean, self.scale = weights["mean"], weights["scale"]
        self.W, self.b = weights["W"], weights["b"]
        self.classes = list(classes)
        if self.W.shape != (len(self.mean), len(self.classes)):
            raise ValueError(f"head weights {self.W.shape} do not fit {len(self.mean)} features x "
                             f"{len(self.classes)} classes")

    def logits(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.W + self.b

    def lines(self, x: np.ndarray) -> list[str]:
        return [self.classes[k] for k in self.logits(x).argmax(1)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_head(folder: str | Path, weights: dict[str, np.ndarray], manifest: dict[str, Any]) -> HeadManifest:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {k: v.astype(np.float32) for k, v in weights.items()}
    np.savez(folder / WEIGHTS_FILE, **arrays)
    man = HeadManifest.model_validate({**manifest, "weights_sha256": sha256(folder / WEIGHTS_FILE)})
    (folder / MANIFEST_FILE).write_text(json.dumps(man.model_dump(), indent=1) + "\n")
    return man


def load_head(folder: str | Path | None = None) -> tuple[Head, HeadManifest]:
    """The head at ``folder`` (default: the one shipped in the package); ``HeadArtefactMissing`` if absent,
    incomplete, altered or built for other features."""
    folder = Path(folder) if folder is not None else head_dir()
    for name in (MANIFEST_FILE, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise HeadArtefactMissing(f"policy head artefact {folder} has no {name} "
                                      "(rebuild it: python -m policy.head_train fit, see its manifest's reproduce)")
    man = HeadManifest.model_validate_json((folder / MANIFEST_FILE).read_text())
    if sha256(folder / WEIGHTS_FILE) != man.weights_sha256:
        raise HeadArtefactMissing(f"{folder / WEIGHTS_FILE} does not match the sha256 in its manifest")
    if man.features != FEATURES_VERSION:
        raise HeadArtefactMissing(f"{folder} was built for {man.features}, this code computes {FEATURES_VERSION}")
    with np.load(folder / WEIGHTS_FILE) as z:
        weights = {k: z[k] for k in z.files}
    return Head(weights, man.classes), man


class HeadPolicy:
    """The distilled per-fact policy behind the ``Policy`` protocol: ``state`` / ``state_text`` / ``line_texts``.
    ``embedder``: anything with ``embed(texts) -> unit vectors`` (the retrieval embedder; MiniLM by default,
    loaded on first use)."""

    def __init__(self, folder: str | Path | None = None, embedder: Any = None):
        self.head, self.manifest = load_head(folder)
        self.name = f"learned-head:{self.manifest.name}"
        self._embedder = embedder

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from llmclients.embeddings import EmbedderConfig, make_embedder

            self._embedder = make_embedder(EmbedderConfig())
        return self._embedder

    def features(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> np.ndarray:
        if self.manifest.columns == "struct":  # the weights of every embedding column are 0: no MiniLM call
            dim = (len(self.head.mean) - structure(bundle, choices).shape[1] - 4) // 3
            vecs = np.zeros((len(bundle.items) + 1, dim), dtype=np.float32)
        else:
            vecs = np.asarray(self.embedder.embed(embed_texts(request, bundle)), dtype=np.float32)
        return features(vecs[0], vecs[1:], bundle, choices)

    def line_texts(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> list[str]:
        if not bundle.items:
            return []
        return self.head.lines(self.features(request, bundle, choices))

    def state_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> str:
        return assemble([it.alias for it in bundle.items], self.line_texts(request, bundle, choices))

    def state(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> ReasoningState:
        return fit_state(parse_state(self.state_text(request, bundle, choices), [it.alias for it in bundle.items]))
