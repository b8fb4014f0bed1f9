"""Before a training run loads anything heavy: are the files and weights its config names there?

A run that fails after minutes of model loading on ``FileNotFoundError: data/policy/train.jsonl``
tells the user nothing; this says what to run first, in one sentence.
"""

from __future__ import annotations

from pathlib import Path

from policy.config import TrainConfig


class MissingInput(FileNotFoundError):
    """A file, folder or model the training config names is not on this machine."""


def _hub_cached(repo_id: str) -> bool:
    """True if ``repo_id``'s config is in the local Hugging Face cache (training never downloads)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id is simply "not there"
        return False


def missing_inputs(cfg: TrainConfig) -> list[str]:
    """One sentence per input of ``cfg`` that does not exist; empty when the run can start."""
    out: list[str] = []
    absent = [p for p in (cfg.data.train_path, cfg.data.eval_path) if p and not Path(p).is_file()]
    if absent:
        out.append(f"training data {' and '.join(absent)} {'does' if len(absent) == 1 else 'do'} not exist: "
                   f"run `evomem build-data --out {Path(absent[0]).parent}` first")
    m = cfg.model
    if m.source in ("hf", "checkpoint") and m.name_or_path:
        p = Path(m.name_or_path).expanduser()
        looks_local = m.source == "checkpoint" or m.name_or_path.startswith(("/", ".", "~")) or p.exists()
        if looks_local and not p.is_dir():
            out.append(f"model folder {m.name_or_path} does not exist"
                       + (": run the SFT warm-up first" if m.source == "checkpoint" else ""))
        elif not looks_local and not _hub_cached(m.name_or_path):
            out.append(f"model {m.name_or_path} is neither a local folder nor in the Hugging Face cache: "
                       f"`huggingface-cli download {m.name_or_path}` first, or set model.name_or_path to a folder")
    if m.source == "gguf" and m.name_or_path and not Path(m.name_or_path).is_dir():
        out.append(f"GGUF folder {m.name_or_path} does not exist")
    return out


def check_inputs(cfg: TrainConfig) -> None:
    """Raise MissingInput naming every absent input (the CLI prints it as a sentence)."""
    missing = missing_inputs(cfg)
    if missing:
        raise MissingInput("; ".join(missing))
