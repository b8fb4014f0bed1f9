"""FEVER and SciFact, read from local files when a user has them, turned into belief-vs-evidence cases.

D.1: fact-verification claims become objective questions with their supporting evidence; the user's
memory then holds a belief that contradicts the evidence, phrased from one of three perspectives
(personal belief, identity, perceived expertise), mixed with irrelevant everyday facts. The right state
uses the evidence and does not treat the belief as evidence.

Expected files (the datasets' own formats; nothing is downloaded):
- FEVER: a claims JSONL (``{"id", "label": SUPPORTS|REFUTES|NOT ENOUGH INFO, "claim", "evidence":
  [[[annotation_id, evidence_id, page, sentence_id], ...], ...]}``) and the ``wiki-pages`` folder
  (JSONL files of ``{"id": page, "lines": "0\\tsentence\\n1\\t..."}``). Rows whose evidence cannot be
  resolved, and NOT ENOUGH INFO rows, are skipped and counted.
- SciFact: ``claims_*.jsonl`` (``{"id", "claim", "evidence": {doc_id: [{"sentences": [..], "label":
  SUPPORT|CONTRADICT}]}}``) and ``corpus.jsonl`` (``{"doc_id", "title", "abstract": [sentences]}``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from training_data.base import FactSpec, GoldUse, TrainingInstance, assemble, shuffled_choices
from training_data.synthetic import templates

BELIEF_FRAMES = ("The user is convinced that {s}.", "As a {job}, the user insists that {s}.",
                 "The user, who considers themself an expert on this, says {s}.")
EVIDENCE = GoldUse(use=True, role="evidence", priority="high")
BELIEF = GoldUse(use=False, role="irrelevant", priority="low")
EVERYDAY = GoldUse(use=False, role="irrelevant", priority="low")


def _lower_first(s: str) -> str:
    s = s.strip().rstrip(".")
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


def claim_instance(source: str, row_id: str, claim: str, supported: bool, evidence: Sequence[str], where: str,
                   seed: int, max_everyday: int = 2) -> TrainingInstance:
    """One belief-vs-evidence instance: evidence sentences, a contradicting belief, everyday distractors."""
    rng = random.Random(f"{source}:{seed}:{row_id}")
    t = templates()
    claim_text = _lower_first(claim)
    belief_claim = claim_text if not supported else f"it is false that {claim_text}"
    specs = [FactSpec(key="belief", kind="belief", days=rng.randint(20, 300), gold=BELIEF,
                      statement=rng.choice(BELIEF_FRAMES).format(s=belief_claim, job=rng.choice(t["jobs"])))]
    for n, sent in enumerate(evidence[:3]):
        specs.append(FactSpec(key=f"ev{n}", kind="event", days=rng.randint(1, 30), gold=EVIDENCE,
                              statement=f"The user read in {where}: {sent.strip()}"))
    for n, line in enumerate(rng.sample(t["templates"]["everyday"], rng.randint(1, max_everyday))):
        specs.append(FactSpec(key=f"every{n}", kind="circumstance", days=rng.randint(5, 400), gold=EVERYDAY,
                              statement=line))
    rels = [("CONFLICTS_WITH", s.key, "belief") for s in specs if s.key.startswith("ev")]
    key = f"{source}-{row_id}"
    items, gold, _ = assemble(key, key, specs, rels, rng)  # type: ignore[arg-type]
    answer = "True" if supported else "False"
    return TrainingInstance(instance_id=f"{source}:{row_id}", source=source, category="belief-vs-evidence",
                            user_id=key, request=f"Is this claim true or false? {claim.strip()}", evidence=items,
                            reference_answer=answer, choices=shuffled_choices(answer, ["True", "False"], rng),
                            scorer="choice", gold=gold, metadata={"claim": claim, "label": answer})


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open() as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


class FeverSource:
    """FEVER claims + wiki-pages from local paths (see module doc)."""

    name = "fever"

    def __init__(self, claims_path: str | Path, wiki_dir: str | Path, limit: int | None = None):
        self.claims_path, self.wiki_dir, self.limit = Path(claims_path), Path(wiki_dir), limit
        self.skipped = 0

    def _needed_pages(self, rows: Sequence[dict[str, Any]]) -> set[str]:
        return {ev[2] for r in rows for group in r.get("evidence", []) for ev in group if ev[2] is not None}

    def _sentences(self, pages: set[str]) -> dict[tuple[str, int], str]:
        out: dict[tuple[str, int], str] = {}
        for f in sorted(self.wiki_dir.glob("*.jsonl")):
            for page in _jsonl(f):
                if page["id"] in pages:
                    for line in page.get("lines", "").split("\n"):
                        parts = line.split("\t")
                        if len(parts) >= 2 and parts[0].isdigit() and parts[1].strip():
                            out[(page["id"], int(parts[0]))] = parts[1]
        return out

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        rows = [r for r in _jsonl(self.claims_path) if r.get("label") in ("SUPPORTS", "REFUTES")]
        rows = rows[: self.limit] if self.limit else rows
        sents = self._sentences(self._needed_pages(rows))
        self.skipped = 0
        for r in rows:
            group = next((g for g in r.get("evidence", []) if all((e[2], e[3]) in sents for e in g)), None)
            if not group:
                self.skipped += 1
                continue
            evidence = [sents[(e[2], e[3])] for e in group]
            page = group[0][2].replace("_", " ")
            yield claim_instance(self.name, str(r["id"]), r["claim"], r["label"] == "SUPPORTS", evidence,
                                 f"the Wikipedia article on {page}", seed)


class SciFactSource:
    """SciFact claims + corpus from local paths (see module doc)."""

    name = "scifact"

    def __init__(self, claims_path: str | Path, corpus_path: str | Path, limit: int | None = None):
        self.claims_path, self.corpus_path, self.limit = Path(claims_path), Path(corpus_path), limit
        self.skipped = 0

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        corpus = {str(d["doc_id"]): d for d in _jsonl(self.corpus_path)}
        rows = list(_jsonl(self.claims_path))
        rows = rows[: self.limit] if self.limit else rows
        self.skipped = 0
        for r in rows:
            picked = None
            for doc_id, anns in sorted((r.get("evidence") or {}).items()):
                doc = corpus.get(str(doc_id))
                if doc is None:
                    continue
                for ann in anns:
                    if ann.get("label") in ("SUPPORT", "CONTRADICT"):
                        sents = [doc["abstract"][i] for i in ann["sentences"] if i < len(doc["abstract"])]
                        if sents:
                            picked = (doc, ann["label"] == "SUPPORT", sents)
                            break
                if picked:
                    break
            if picked is None:
                self.skipped += 1
                continue
            doc, supported, sents = picked
            yield claim_instance(self.name, str(r["id"]), r["claim"], supported, sents,
                                 f"the abstract of \"{doc['title']}\"", seed)
