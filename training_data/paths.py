"""Where the benchmark development data is: beside the checkout, never at one machine's absolute path.

The layout CI and the README use is ``<repo>/../shared/data`` (locomo, memsyco-bench, beam);
``EVOMEM_DATA_DIR`` overrides it (read at call time, e.g. for a git worktree elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The benchmark data folder (it may not exist; callers decide whether that is an error)."""
    env = os.environ if env is None else env
    if env.get("EVOMEM_DATA_DIR"):
        return Path(env["EVOMEM_DATA_DIR"]).expanduser().resolve()
    return (REPO_ROOT.parent / "shared" / "data").resolve()


def memsyco_root() -> Path:
    return data_dir() / "memsyco-bench"
