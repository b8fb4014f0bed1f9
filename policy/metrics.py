"""Training metrics: every log line to ``metrics.jsonl``, and the curve plot ``metrics.png``.

The plot shows train reward and lift, held-out reward/accuracy at each evaluation, the baselines the
run was given (rule, no state, random states, oracle) as horizontal lines, the format/disclosure gates,
and KL/entropy — what one needs to see whether GRPO is learning or drifting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsWriter:
    """Appends every log line (TRL's and ours) to metrics.jsonl; draws metrics.png at the end."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def write(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(row, default=float) + "\n")


def plot_metrics(metrics_path: Path, out: Path, title: str) -> Path | None:
    """Train reward, lift, format failures, KL and held-out reward/accuracy against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(x) for x in metrics_path.read_text().splitlines() if x.strip()]
    if not rows:
        return None

    def series(key: str) -> tuple[list[float], list[float]]:
        pts = [(r["step"], r[key]) for r in rows if r.get(key) is not None and "step" in r]
        return [p[0] for p in pts], [p[1] for p in pts]

    warm = [(r["step"], r["loss"]) for r in rows if r.get("phase") == "warmup" and "loss" in r and "step" in r]
    fig, axes = plt.subplots(1, 4 if warm else 3, figsize=(20 if warm else 15, 4))
    for key, label in (("reward", "train reward"), ("state/lift", "train lift over no state"),
                       ("heldout/reward", "held-out reward"), ("heldout/accuracy", "held-out accuracy"),
                       ("val/reward", "validation reward (selects best/)")):
        xs, ys = series(key)
        if xs:
            axes[0].plot(xs, ys, label=label, marker="o" if key.startswith(("heldout", "val")) else ".")
    styles = {"rule": "tab:red", "no_state": "tab:gray", "random_states": "tab:purple", "oracle": "tab:green",
              "fixed_position": "tab:brown"}
    for name, color in styles.items():
        for metric, ls in (("accuracy", "--"), ("reward", ":")):
            vals = [r[f"baseline/{name}/{metric}"] for r in rows if r.get(f"baseline/{name}/{metric}") is not None]
            if vals:
                axes[0].axhline(vals[-1], linestyle=ls, linewidth=1, color=color, label=f"{name} {metric}")
    axes[0].set_title("reward / accuracy")
    axes[0].legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)  # below: curves stay visible
    for key in ("state/format_fail_rate", "state/disclosure_rate"):
        xs, ys = series(key)
        if xs:
            axes[1].plot(xs, ys, label=key.split("/")[-1], marker=".")
    axes[1].set_title("gates")
    axes[1].legend(fontsize=7)
    for key in ("kl", "entropy"):
        xs, ys = series(key)
        if xs:
            axes[2].plot(xs, ys, label=key, marker=".")
    axes[2].set_title("KL / entropy")
    axes[2].legend(fontsize=7)
    if warm:  # the supervised warm-up before GRPO: its own step axis
        axes[3].plot([w[0] for w in warm], [w[1] for w in warm], marker=".")
        axes[3].set_title("warm-up loss (before GRPO)")
    for ax in axes:
        ax.set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
