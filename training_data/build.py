"""``evomem build-data``: run the configured sources, split, write JSONL + a manifest.

Output folder: ``train.jsonl`` and ``heldout.jsonl`` (one TrainingInstance per line; the split is a hash
of the instance id, so an instance never changes sides when the build grows) and ``manifest.json``
(seed, counts per source / category / split, each file's sha256 and one overall ``hash``). Same seed and
same inputs give byte-identical files and the same hash.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from training_data.base import Source, TrainingInstance
from training_data.synthetic import SyntheticConfig, SyntheticSource, templates

BUILD_VERSION = "build-data-v1"


class BuildConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(default=0, description="Seed for every source.")
    heldout_fraction: float = Field(default=0.1, ge=0, lt=1, description="Share of instances in heldout.jsonl.")
    synthetic: SyntheticConfig | None = Field(default_factory=SyntheticConfig, description="None: no synthetic data.")
    memsyco_root: str | None = Field(default=None, description="MemSyco-Bench folder (dev rows).")
    fever_claims: str | None = Field(default=None, description="FEVER claims JSONL.")
    fever_wiki: str | None = Field(default=None, description="FEVER wiki-pages folder.")
    scifact_claims: str | None = Field(default=None, description="SciFact claims JSONL.")
    scifact_corpus: str | None = Field(default=None, description="SciFact corpus.jsonl.")
    personamem_questions: str | None = Field(default=None, description="PersonaMem questions CSV.")
    personamem_contexts: str | None = Field(default=None, description="PersonaMem shared contexts JSONL.")


def sources(cfg: BuildConfig) -> list[Source]:
    out: list[Source] = []
    if cfg.synthetic is not None:
        out.append(SyntheticSource(cfg.synthetic))
    if cfg.memsyco_root:
        from training_data.memsyco import MemSycoSource

        out.append(MemSycoSource(cfg.memsyco_root))
    if bool(cfg.fever_claims) != bool(cfg.fever_wiki):
        raise ValueError("FEVER needs both fever_claims and fever_wiki")
    if cfg.fever_claims and cfg.fever_wiki:
        from training_data.factcheck import FeverSource

        out.append(FeverSource(cfg.fever_claims, cfg.fever_wiki))
    if bool(cfg.scifact_claims) != bool(cfg.scifact_corpus):
        raise ValueError("SciFact needs both scifact_claims and scifact_corpus")
    if cfg.scifact_claims and cfg.scifact_corpus:
        from training_data.factcheck import SciFactSource

        out.append(SciFactSource(cfg.scifact_claims, cfg.scifact_corpus))
    if bool(cfg.personamem_questions) != bool(cfg.personamem_contexts):
        raise ValueError("PersonaMem needs both personamem_questions and personamem_contexts")
    if cfg.personamem_questions and cfg.personamem_contexts:
        from training_data.personamem import PersonaMemSource

        out.append(PersonaMemSource(cfg.personamem_questions, cfg.personamem_contexts))
    if not out:
        raise ValueError("no source configured")
    return out


def is_heldout(instance_id: str, fraction: float) -> bool:
    """Stable split: the first 8 hex digits of sha256(id) as a number in [0, 1).

    >>> is_heldout("synthetic:0:1", 0.0)
    False
    """
    return int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16) / 16 ** 8 < fraction


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_data(out_dir: str | Path, cfg: BuildConfig) -> dict[str, Any]:
    """Write train/heldout JSONL + manifest.json into ``out_dir``; returns the manifest."""
    srcs = sources(cfg)  # validate the configuration before touching the disk
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, Counter[str]] = {"source": Counter(), "category": Counter(), "split": Counter(),
                                       "source/category": Counter()}
    skipped: dict[str, int] = {}
    seen: set[str] = set()
    paths = {"train": out / "train.jsonl", "heldout": out / "heldout.jsonl"}
    with paths["train"].open("w") as tr, paths["heldout"].open("w") as ho:
        for src in srcs:
            for inst in src.instances(cfg.seed):
                if inst.instance_id in seen:
                    raise ValueError(f"duplicate instance id {inst.instance_id}")
                seen.add(inst.instance_id)
                split = "heldout" if is_heldout(inst.instance_id, cfg.heldout_fraction) else "train"
                (ho if split == "heldout" else tr).write(_line(inst))
                counts["source"][inst.source] += 1
                counts["category"][inst.category] += 1
                counts["split"][split] += 1
                counts["source/category"][f"{inst.source}/{inst.category}"] += 1
            if hasattr(src, "skipped"):
                skipped[src.name] = int(src.skipped)  # type: ignore[attr-defined]
    files = {name: {"path": p.name, "sha256": _sha(p)} for name, p in paths.items()}
    overall = hashlib.sha256("".join(files[k]["sha256"] for k in sorted(files)).encode()).hexdigest()
    manifest = {"version": BUILD_VERSION, "seed": cfg.seed, "config": cfg.model_dump(mode="json"),
                "synthetic_templates": templates()["version"], "total": len(seen),
                "counts": {k: dict(sorted(v.items())) for k, v in counts.items()}, "skipped": skipped,
                "files": files, "hash": overall}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _line(inst: TrainingInstance) -> str:
    return inst.model_dump_json() + "\n"
