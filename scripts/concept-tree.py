"""Print the concept tree induced from one user's stored facts (induction/concepts.py).

    python scripts/concept-tree.py --store .evomem/store --user conv-26 [--examples 2] > tree.md

Embeds each fact's retrieval text (statement with its holder) with the configured embedder, clusters,
names the clusters by their characteristic terms and splits the heterogeneous ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.embedded import EmbeddedStore  # noqa: E402
from retrieval.seeds.index import retrieval_text  # noqa: E402
from induction.concepts import ConceptInductionConfig, induce_tree, render_tree  # noqa: E402
from llmclients.embeddings import EmbedderConfig, make_embedder  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="embedded store directory")
    ap.add_argument("--user", required=True)
    ap.add_argument("--examples", type=int, default=0, help="example facts under each leaf")
    args = ap.parse_args()
    store = EmbeddedStore(args.store)
    try:
        snap = store.load_snapshot(args.user)
    finally:
        store.close()
    ids = sorted(snap.facts)
    texts = [retrieval_text(snap.facts[i]) for i in ids]
    vecs = make_embedder(EmbedderConfig()).embed(texts)
    tree = induce_tree(ids, vecs, texts, ConceptInductionConfig())
    print(f"# Induced concepts of {args.user}: {len(ids)} facts, {len(tree)} top-level concepts, "
          f"{sum(len(c.children) for c in tree)} children\n")
    print(render_tree(tree, dict(zip(ids, texts)), args.examples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
