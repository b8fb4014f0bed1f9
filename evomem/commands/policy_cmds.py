"""Policy subcommands: build-data (training instances) and train-policy (GRPO).

    evomem build-data --out data/policy --synthetic-n 5000 --memsyco-root ../shared/data/memsyco-bench
    evomem build-instances --out runs/policy-retrieved --memsyco-root ../shared/data/memsyco-bench
    evomem train-policy --config configs/grpo-cpu-smoke.yaml --set max_steps=3 output_dir=runs/smoke
    evomem ship-policy --run runs/grpo-cpu-smollm2-read --heldout runs/grpo-cpu-smollm2-read/heldout
    evomem train-reader --config reader-smollm2 --set seed=0
"""

from __future__ import annotations

import sys
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
    state_n: int = Field(default=0, ge=0, description="State cases written as edits: disputed constraints, expired "
                         "plans, outside evidence, retractions (training only; training_data/state_cases.py).")
    k: int = Field(default=6, ge=1, description="Facts retrieved per request.")
    seed: int = Field(default=0, description="Seed (option order, synthetic cases).")
    progress: bool = Field(default=True, description="Progress bar on stderr.")


class TrainPolicyOptions(CommonOptions):
    config: str = Field(description="Training YAML (configs/grpo-*.yaml) or a preset name.")
    set: list[str] | None = Field(default=None, description="Overrides KEY=VALUE (dotted keys), e.g. max_steps=3 lora.r=8.")


class ShipPolicyOptions(CommonOptions):
    run: str = Field(description="A finished `evomem train-policy` output_dir (config.json, metrics.jsonl, best/).")
    checkpoint: str = Field(default="best", description="Folder inside the run to ship (best/ = validation-picked).")
    heldout: str | None = Field(default=None, description="bench/policy_retrieved.py --out folder (or its summary.json) "
                                "for this checkpoint on the never-trained rows, recorded in the manifest.")
    out: str | None = Field(default=None, description="Artefact folder (default: the package's policy/artefact/"
                            "smollm2-read-v1, what `policy_kind: shipped` loads).")


def example_check(opts: CommonOptions, checkpoint: str) -> dict[str, list[str]]:
    """The main job's five requests answered by ``checkpoint``: per request, what its state misses
    (policy/needs.py; a state that does not parse misses everything). Same store, embedder and k as
    ``evomem demo``."""
    import tempfile
    from pathlib import Path

    from evomem.examples import load_history, load_into
    from memcore.memory import Memory
    from policy.learned import LocalLearnedPolicy
    from policy.needs import StateNeeds
    from serving.pipeline import AnswerPipeline, PipelineConfig

    policy = LocalLearnedPolicy.from_checkpoint(checkpoint, temperature=0.0, max_new_tokens=192)  # training's cap
    cfg = PipelineConfig(k=4, on_policy_error="none")  # evomem demo's k
    history = load_history()
    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="evomem-ship-") as tmp:
        settings = opts.settings()
        settings.store.backend, settings.store.path = "embedded", str(Path(tmp) / "s")
        mem = Memory.from_settings(settings)
        load_into(mem, history)
        pipe = AnswerPipeline(mem, policy, answer_model=None, config=cfg)  # type: ignore[arg-type] # no answers
        for req in history["requests"]:
            bundle = pipe.evidence(req["user_id"], req["request"], cfg)
            got = pipe.reason(req["request"], bundle, cfg)
            needs = StateNeeds.model_validate(req.get("needs") or {})
            out[req["request"]] = ([f"state did not parse: {got.fallback}"] if got.fallback else
                                   needs.misses([(it.alias, it.fact.statement) for it in bundle.items], got.state))
        mem.close()
    return out


def cmd_ship_policy(opts: ShipPolicyOptions) -> int:
    import json
    from pathlib import Path

    from evomem.errors import UsageError
    from policy.learned import is_policy_checkpoint
    from policy.shipped import ship_checkpoint, shipped_policy_dir

    run = Path(opts.run)
    if not (run / "config.json").is_file() or not is_policy_checkpoint(run / opts.checkpoint):
        raise UsageError(f"{run} is not a finished `evomem train-policy` run (needs config.json and "
                         f"{opts.checkpoint}/evomem_policy.json)")
    check = example_check(opts, str(run / opts.checkpoint))
    if any(check.values()):  # a policy that writes layouts instead of reading the facts does not ship
        raise UsageError(f"{run / opts.checkpoint} does not ship: on the example history its states miss "
                         + "; ".join(f"{r!r}: {', '.join(m)}" for r, m in check.items() if m))
    cfg = json.loads((run / "config.json").read_text())
    rows = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines() if ln.strip()]
    vals = [r for r in rows if r.get("phase") == "validation"]
    best = max(vals, key=lambda r: r.get("val/reward", float("-inf"))) if vals else {}
    data_dir = Path(cfg["data"]["train_path"]).parent
    hpath = Path(opts.heldout) if opts.heldout else None
    if hpath is not None and hpath.is_dir():
        hpath = hpath / "summary.json"
    heldout = json.loads(hpath.read_text()) if hpath else {}
    heldout.pop("states", None)  # per-row texts stay in the run folder
    build = json.loads((data_dir / "manifest.json").read_text()).get("config", {})
    reproduce = [
        f"evomem build-instances --out {data_dir} --memsyco-root ../shared/data/memsyco-bench "
        f"--limit-per-task {build.get('limit_per_task', 60)} --synthetic-n {build.get('synthetic_n', 0)}"
        + (f" --state-n {build['state_n']}" if build.get("state_n") else ""),
        f"evomem train-policy --config {cfg['name']} --set seed={cfg['seed']} "
        + (f"max_steps={cfg['max_steps']} " if "max_steps" in cfg else "") + f"output_dir={run}",
        f"python bench/policy_retrieved.py --data {data_dir} --config {cfg['name']} --checkpoint {run}/{opts.checkpoint} "
        f"--batch 8 --latency-rows 3 --out {run}/heldout",
        f"evomem ship-policy --run {run}" + (f" --checkpoint {opts.checkpoint}" if opts.checkpoint != "best" else "")
        + f" --heldout {run}/heldout"]
    man = ship_checkpoint(run / opts.checkpoint, Path(opts.out) if opts.out else shipped_policy_dir(),
                          data_manifest=data_dir / "manifest.json", train_config=cfg, validation=best,
                          heldout={**heldout, "example_check": check}, reproduce=reproduce)
    _print(opts, man.model_dump(), lambda: f"shipped {run / opts.checkpoint} as {man.name} "
           f"({man.adapter_bytes / 1e6:.1f} MB, sha256 {man.adapter_sha256[:12]}, data {man.data.get('hash', '?')[:12]})")
    return 0


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
                               state_n=opts.state_n, embedder=EmbedderConfig(kind=opts.embedder or "minilm"))
    from tqdm import tqdm

    bars: list[Any] = []  # opened on the first case: an input error before it prints only its sentence

    def progress(n: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, desc="build-instances", unit="case", disable=not opts.progress,
                             file=sys.stderr))
        bars[0].update(n - bars[0].n)

    try:
        manifest = build_retrieved(opts.out, cfg, progress)
    finally:
        for bar in bars:
            bar.close()

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


class TrainReaderOptions(CommonOptions):
    config: str = Field(description="Reader fine-tune YAML (configs/reader-*.yaml) or a preset name (reader-smollm2).")
    set: list[str] | None = Field(default=None, description="Overrides KEY=VALUE, e.g. seed=1 steps=40.")


def load_reader_config(name: str, overrides: list[str] | None = None) -> Any:
    from policy.config import load_preset
    from policy.reader_tune import ReaderTuneConfig

    return load_preset(name, ReaderTuneConfig, overrides, family="reader")


def cmd_train_reader(opts: TrainReaderOptions) -> int:
    import os

    from policy.reader_tune import train_reader

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cfg = load_reader_config(opts.config, opts.set)
    command = " ".join(["evomem train-reader --config", opts.config, *(["--set", *opts.set] if opts.set else [])])
    res = train_reader(cfg, command=command)
    obj: dict[str, Any] = res.model_dump()
    _print(opts, obj, lambda: "\n".join(f"{k}: {v}" for k, v in obj.items()))
    return 0


COMMANDS: dict[str, Command] = {
    "build-data": (BuildDataOptions, cmd_build_data, "Build policy-training instances (JSONL + manifest)."),
    "build-instances": (BuildInstancesOptions, cmd_build_instances,
                        "Policy instances from real retrieval (ingest -> retrieve -> render; MemSyco held-out split)."),
    "train-policy": (TrainPolicyOptions, cmd_train_policy, "Train the Reasoning-State policy with GRPO (TRL + LoRA)."),
    "train-reader": (TrainReaderOptions, cmd_train_reader,
                     "Fine-tune the frozen LM answer model (LoRA on SmolLM2) to read evidence and Reasoning States."),
    "ship-policy": (ShipPolicyOptions, cmd_ship_policy,
                    "Copy a trained SmolLM2 adapter that passes the example-history check into the "
                    "package as the `shipped` policy, with its manifest."),
}
