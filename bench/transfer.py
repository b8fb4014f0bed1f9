"""Reasoning States for another memory system, measured (evaluation/transfer.py): on MemSyco-Bench dev
rows, turn-level NaiveRAG's retrieved turns read by the deterministic reader alone vs with the
Reasoning State built over them (relations inferred by induction on a scratch store), in one run.

    python bench/transfer.py                              # every dev row, MiniLM, rule policy, k=5
    python bench/transfer.py --limit 20 --embedder hash   # quick
    python bench/transfer.py --policy-path checkpoints/policy   # a learned policy (evomem train-policy)

Extraction and the relation step follow the settings (EVOMEM_EXTRACTOR / EVOMEM_ADJUDICATOR and the
extraction endpoint), like `evomem serve`; the default is the offline extractor and the shipped relation
model (induction/relations; the rules when its artefact is absent).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="memsyco-bench folder (default: training_data.paths).")
    ap.add_argument("--k", type=int, default=5, help="Turns NaiveRAG retrieves per question.")
    ap.add_argument("--limit", type=int, default=None, help="First N rows of each task file.")
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--policy-path", default=None, help="A learned policy checkpoint (default: the rule policy).")
    ap.add_argument("--out", default=None, help="Write the full report (JSON) here.")
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evaluation.transfer import TransferEvalConfig, evaluate_transfer
    from evomem.settings import Settings
    from induction.pipeline import build_ingestor
    from llmclients.config import ModelEndpointConfig
    from memcore.memory import Memory
    from serving.pipeline import make_policy
    from training_data.paths import memsyco_root

    settings = Settings.from_env(os.environ, embedder={"kind": ns.embedder})
    from llmclients.embeddings import make_embedder

    embedder = make_embedder(settings.embedder)
    from graph.embedded import EmbeddedStore

    store = EmbeddedStore(":memory:")
    store.setup()
    base = build_ingestor(Memory(store, embedder, settings.retrieval), settings.ingest, settings.models.extraction)
    policy = make_policy(ModelEndpointConfig(connection="local", model_path=ns.policy_path) if ns.policy_path
                         else ModelEndpointConfig(policy_kind="rule"))
    data = Path(ns.data) if ns.data else memsyco_root()
    cfg = TransferEvalConfig(k=ns.k, limit=ns.limit)

    def progress(n: int, total: int) -> None:
        if n % 50 == 0 or n == total:
            print(f"  {n}/{total} rows", file=sys.stderr, flush=True)

    rep = evaluate_transfer(data, base, policy, cfg, progress)
    print(f"transfer on MemSyco dev ({rep.n_rows} rows with two options, NaiveRAG k={rep.k}, policy {rep.policy}, "
          f"reader {rep.reader}, extractor {base.extractor.name}, adjudicator {type(base.adjudicator).__name__}, "
          f"embedder {ns.embedder}; {rep.seconds}s)")
    print(f"  reader accuracy  NaiveRAG turns alone: {rep.accuracy['rag']:.4f}   + Reasoning State: "
          f"{rep.accuracy['rag+state']:.4f}   (gain {rep.gain:+.4f})   induced facts + state: "
          f"{rep.accuracy['facts+state']:.4f}")
    print(f"  relations inferred per row: {rep.relations_per_row}")
    for task, a in rep.by_task.items():
        print(f"  {task:<28} n={int(a['n']):<4} rag {a['rag']:.3f}  rag+state {a['rag+state']:.3f}  "
              f"facts+state {a['facts+state']:.3f}")
    if ns.out:
        Path(ns.out).write_text(rep.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
