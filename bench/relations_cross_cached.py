"""``evomem train-relations`` on pair caches already built (``pairs-<source>.npz`` of earlier runs), skipping
the pair building (>= 12 min after any change under induction/, which invalidates every cache key). Everything
after the pairs — sampling, validation split, fine-tune, manifest — is the preset's own code path.

    python bench/relations_cross_cached.py --pairs runs/relations-i44/pairs-memsyco.npz \\
        runs/relations-i44/pairs-locomo.npz runs/cross-src/pairs-phrasing.npz runs/cross-src/pairs-beam.npz \\
        runs/h1/pairs-synthetic-720.npz --set 'output_dir="runs/h1/cross-b"'
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import training_data.relations_train as rt  # noqa: E402
from evomem.commands.relations_cmds import load_relations_config  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="relations-cross")
    ap.add_argument("--pairs", nargs="+", required=True, help="pairs-<source>.npz files (build_pairs' caches)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON")
    a = ap.parse_args()

    def cached(cfg: Any, out: Path) -> dict[str, Any]:
        from induction.relations.model import PROBE
        from llmclients.embeddings import EmbedderConfig, make_embedder

        parts = [dict(np.load(f)) for f in a.pairs]
        m = {k: np.concatenate([p[k] for p in parts]) for k in ("X", "y", "group", "source", "text_new", "text_old")}
        m["hash"] = np.asarray(hashlib.sha256("".join(str(p.get("hash", f)) for p, f in zip(parts, a.pairs)).encode()).hexdigest())
        emb = make_embedder(EmbedderConfig())
        m["dim"] = np.asarray(emb.dim)
        m["probe"] = np.asarray(emb.embed([PROBE])[0], dtype=np.float32)
        return m

    rt.build_pairs = cached  # type: ignore[assignment]
    print(rt.train_relations(load_relations_config(a.config, a.set)).model_dump_json(indent=1))


if __name__ == "__main__":
    main()
