"""``evomem train-relations``: train the relation model (training_data/relations_train.py).

    evomem train-relations --config relations-default            # the shipped model (--set ship=true)
    evomem train-relations --config configs/relations-smoke.yaml --set output_dir=runs/rel-smoke
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evomem.commands.common import Command, CommonOptions, _print


class TrainRelationsOptions(CommonOptions):
    config: str = Field(description="Relation-training YAML (configs/relations-*.yaml) or a preset name "
                        "(relations-default, relations-smoke).")
    set: list[str] | None = Field(default=None, description="Overrides KEY=VALUE (dotted keys), e.g. seed=1 model.hidden=32.")


def load_relations_config(name: str, overrides: list[str] | None = None) -> Any:
    from policy.config import load_preset
    from training_data.relations_train import RelationTrainConfig

    return load_preset(name, RelationTrainConfig, overrides, family="relations")


def cmd_train_relations(opts: TrainRelationsOptions) -> int:
    import os

    from training_data.relations_train import train_relations

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the embedder is the packaged MiniLM; nothing is downloaded
    res = train_relations(load_relations_config(opts.config, opts.set))
    obj: dict[str, Any] = res.model_dump()
    _print(opts, obj, lambda: "\n".join(f"{k}: {v}" for k, v in obj.items()))
    return 0


COMMANDS: dict[str, Command] = {
    "train-relations": (TrainRelationsOptions, cmd_train_relations,
                        "Train the relation model (supersedes / conflicts_with / duplicate / unrelated)."),
}
