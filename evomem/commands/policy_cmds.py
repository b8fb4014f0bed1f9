"""Policy subcommands: build-data (training instances) and train-policy (GRPO).

    evomem build-data --out data/policy --synthetic-n 5000 --memsyco-root ../shared/data/memsyco-bench
    evomem build-instances --out runs/policy-retrieved --memsyco-root ../shared/data/memsyco-bench
    evomem train-policy --config configs/grpo-cpu-smoke.yaml --set max_steps=3 output_dir=runs/smoke
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evomem.commands.common import Command, CommonOptions, _print


class BuildDataOptions(CommonOptions):
    out: str = Field(description="Output folder (train.jsonl, heldout.jsonl, manifest.json).")
    seed: int = Field(default=0, description="Seed for every source (same seed -> same files and hash).")
    synthetic_n: int = Field(default=5000, ge=0, description="Synthetic instances (0 = none).")
    heldout_fraction: float = Field(default=0.1, ge=0, lt=1, description="Share written to heldout.jsonl.")
    memsyco_root: str | None = Field(default=None, description="MemSyco-Bench folder (dev rows), e.g. "
                                     "../shared/data/memsyco-bench.")
    fever_claims: str | None = Field(default=None, description="FEVER claims JSONL (needs --fever-wiki).")
    fever_wiki: str | None = Field(default=None, description="FEVER wiki-pages folder.")
    scifact_claims: str | None = Field(default=None, description="SciFact claims JSONL (needs --scifact-corpus).")
    scifact_corpus: str | None = Field(default=None, description="SciFact corpus.jsonl.")
    personamem_questions: str | None = Field(default=None, description="PersonaMem questions CSV (needs contexts).")
    personamem_contexts: str | None = Field(default=None, description="PersonaMem shared-contexts JSONL.")


class BuildInstancesOptions(CommonOptions):
    out: str = Field(description="Output folder (train.jsonl, heldout.jsonl, manifest.json).")
    memsyco_root: str | None = Field(default=None, description="MemSyco-Bench folder (dev rows).")
    limit_per_task: int | None = Field(default=60, ge=1, description="First N rows of each MemSyco task.")
    heldout_fraction: float = Field(default=0.3, gt=0, lt=1, description="Share of MemSyco rows held out (by row id).")
    synthetic_n: int = Field(default=30, ge=0, description="Synthetic dialogues (training only).")
    k: int = Field(default=6, ge=1, description="Facts retrieved per request.")
    seed: int = Field(default=0, description="Seed (option order, synthetic cases).")


class TrainPolicyOptions(CommonOptions):
    config: str = Field(description="Training YAML (configs/grpo-*.yaml) or a preset name.")
    set: list[str] | None = Field(default=None, description="Overrides KEY=VALUE (dotted keys), e.g. max_steps=3 lora.r=8.")


def cmd_build_data(opts: BuildDataOptions) -> int:
    from training_data.build import BuildConfig, build_data
    from training_data.synthetic import SyntheticConfig

    cfg = BuildConfig(seed=opts.seed, heldout_fraction=opts.heldout_fraction,
                      synthetic=SyntheticConfig(n=opts.synthetic_n) if opts.synthetic_n else None,
                      memsyco_root=opts.memsyco_root, fever_claims=opts.fever_claims, fever_wiki=opts.fever_wiki,
                      scifact_claims=opts.scifact_claims, scifact_corpus=opts.scifact_corpus,
                      personamem_questions=opts.personamem_questions, personamem_contexts=opts.personamem_contexts)
    manifest = build_data(opts.out, cfg)

    def text() -> str:
        c = manifest["counts"]
        lines = [f"wrote {manifest['total']} instances to {opts.out} (seed {manifest['seed']}, hash {manifest['hash'][:16]})"]
        lines += [f"  {k:<28} {v}" for k, v in c["source/category"].items()]
        lines.append("  split: " + ", ".join(f"{k}={v}" for k, v in c["split"].items()))
        if manifest["skipped"]:
            lines.append("  skipped (unresolvable rows): " + ", ".join(f"{k}={v}" for k, v in manifest["skipped"].items()))
        return "\n".join(lines)

    _print(opts, manifest, text)
    return 0


def cmd_build_instances(opts: BuildInstancesOptions) -> int:
    from llmclients.embeddings import EmbedderConfig
    from training_data.retrieved import RetrievedBuildConfig, build_retrieved

    cfg = RetrievedBuildConfig(seed=opts.seed, memsyco_root=opts.memsyco_root, limit_per_task=opts.limit_per_task,
                               heldout_fraction=opts.heldout_fraction, synthetic_n=opts.synthetic_n, k=opts.k,
                               embedder=EmbedderConfig(kind=opts.embedder or "minilm"))
    manifest = build_retrieved(opts.out, cfg)

    def text() -> str:
        c = manifest["counts"]
        lines = [f"wrote {sum(c['split'].values())} instances to {opts.out} (extractor {manifest['extractor']}, "
                 f"hash {manifest['hash'][:16]}, {manifest['seconds']} s)"]
        lines += [f"  {k:<48} {v}" for k, v in c["split/family"].items()]
        lines.append("  relational states: " + ", ".join(f"{k}={v}" for k, v in c["validity"].items()))
        if manifest["ingest_errors"]:
            lines.append(f"  ingest errors: {len(manifest['ingest_errors'])} (see manifest.json)")
        return "\n".join(lines)

    _print(opts, manifest, text)
    return 0


def cmd_train_policy(opts: TrainPolicyOptions) -> int:
    import os

    from policy.config import load_config
    from policy.train import train

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # training never downloads: models come from configs or disk
    cfg = load_config(opts.config, opts.set or [])
    res = train(cfg)
    obj: dict[str, Any] = res.model_dump()
    _print(opts, obj, lambda: "\n".join(f"{k}: {v}" for k, v in obj.items()))
    return 0


COMMANDS: dict[str, Command] = {
    "build-data": (BuildDataOptions, cmd_build_data, "Build policy-training instances (JSONL + manifest)."),
    "build-instances": (BuildInstancesOptions, cmd_build_instances,
                        "Policy instances from real retrieval (ingest -> retrieve -> render; MemSyco held-out split)."),
    "train-policy": (TrainPolicyOptions, cmd_train_policy, "Train the Reasoning-State policy with GRPO (TRL + LoRA)."),
}
