"""Embedders: the shipped MiniLM loads offline and ranks sensibly; the hashing embedder is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from llmclients.embeddings import EmbedderConfig, HashEmbedder, make_embedder


def test_hash_embedder_is_deterministic_and_normalized() -> None:
    e = HashEmbedder(32)
    a, b = e.embed(["I love hiking", "I love hiking"]), e.embed(["beach trips"])
    assert np.allclose(a[0], a[1]) and a.shape == (2, 32)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0) and abs(float(a[0] @ b[0])) < 0.99


def test_model_path_required_for_production_kinds() -> None:
    with pytest.raises(ValueError, match="model_path"):
        make_embedder(EmbedderConfig(kind="bge-m3"))


@pytest.mark.slow
def test_minilm_from_package_offline() -> None:
    e = make_embedder(EmbedderConfig())
    v = e.embed(["I really enjoy hiking in the mountains", "Mountain hikes are my favourite",
                 "My tax return is due in April"])
    assert e.dim == 384 and v.shape == (3, 384)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2
