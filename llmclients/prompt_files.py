"""The one prompt loader: prompts are YAML data shipped inside a package (``<package>/<prefix><name>.yaml``)
or a YAML file named by path, validated into the caller's pydantic model. policy/, serving/ and scoring/
each keep their own prompt model (its fields and placeholder checks) and load through this."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


class PromptNotFound(FileNotFoundError, ValueError):
    """No such shipped prompt and no such file (both a missing file and a bad name to callers)."""


def known_prompt_files(package: str, prefix: str = "") -> list[str]:
    """Names of the prompts shipped in ``package`` (file stems without ``prefix``)."""
    return sorted(p.name[len(prefix):-len(".yaml")] for p in resources.files(package).iterdir()
                  if p.name.startswith(prefix) and p.name.endswith(".yaml"))


def load_prompt_file(package: str, name: str, model: type[T], *, prefix: str = "") -> T:
    """``name``: a shipped prompt of ``package`` or a path ending in .yaml/.yml; parsed as ``model``."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise PromptNotFound(f"no prompt file {name!r}")
        text = path.read_text(encoding="utf-8")
    else:
        res = resources.files(package).joinpath(f"{prefix}{name}.yaml")
        if not res.is_file():
            known = ", ".join(known_prompt_files(package, prefix))
            raise PromptNotFound(f"no prompt {name!r} in {package.replace('.', '/')} (known: {known}, or a .yaml path)")
        text = res.read_text(encoding="utf-8")
    return model.model_validate(yaml.safe_load(text))
