"""argparse from pydantic: each subcommand's options are one config class (help text = field description)."""

from __future__ import annotations

import argparse
import json
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel


def positional(description: str) -> dict[str, Any]:
    """Field(**positional("...")) marks a field as a positional argument."""
    return {"description": description, "json_schema_extra": {"positional": True}}


def _base_type(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return tp


def add_model_args(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        tp = _base_type(field.annotation)
        kw: dict[str, Any] = {"help": field.description or ""}
        if get_origin(tp) is Literal:
            kw["choices"] = list(get_args(tp))
        if extra.get("positional"):
            if get_origin(tp) is list:
                kw["nargs"] = "+"
            parser.add_argument(name, **kw)
            continue
        flag = str(extra.get("flag") or "--" + name.replace("_", "-"))
        kw["dest"] = name
        if tp is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, **kw)
        elif get_origin(tp) is list:
            parser.add_argument(flag, nargs="+", default=None, **kw)
        elif tp in (int, float):
            parser.add_argument(flag, type=tp, default=None, **kw)
        elif tp is dict or get_origin(tp) is dict:
            parser.add_argument(flag, type=json.loads, default=None, **kw)
        else:
            parser.add_argument(flag, default=None, **kw)
        if field.is_required():
            parser._actions[-1].required = True


def model_from_args(model: type[BaseModel], ns: argparse.Namespace) -> BaseModel:
    values = {k: getattr(ns, k) for k in model.model_fields if getattr(ns, k, None) is not None}
    return model(**values)
