"""Does the frozen reader read a Reasoning State, and where does it stop? (issue 48 item 1, diagnostic)

On validation rows of the neutral training split (``policy.reader_tune.split_val``; held-out rows are never
read), P(right option) under four states that differ only in what they say about the decision:

- ``oracle_rules`` / ``wrong_rules``: the oracle state and its swapped twin with RULE lines — facts named by
  alias only (``F2 replaces F1; go by F2``), as a policy writes them;
- ``say_right`` / ``say_wrong``: the oracle's fact lines with one RULE line that quotes an option's text
  (``The answer is: <option>``) — a leak no policy may write, used here only as a probe.

If ``say_right - say_wrong`` is clearly positive while ``oracle_rules - wrong_rules`` is ~0, the reader reads
the state block but cannot follow an alias to the memory line and from there to the option.

    python bench/reader_alias_probe.py [--rows 5] [--reader policy/artefact/smollm2-reader-v1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="runs/neutral/train.jsonl")
    ap.add_argument("--rows", type=int, default=5, help="Validation rows, balanced by family.")
    ap.add_argument("--reader", default=None, help="A fine-tuned reader adapter (default: base SmolLM2).")
    ns = ap.parse_args(argv)
    import torch

    from policy.lmreader import LMReader
    from policy.reader_tune import balanced, condition_state, split_val, target_index
    from training_data.base import TrainingInstance

    torch.set_num_threads(1)
    rows = [TrainingInstance.model_validate_json(x) for x in Path(ns.data).read_text().splitlines() if x.strip()]
    val = balanced(split_val([r for r in rows if r.choices], 0.1)[1], ns.rows)
    reader = LMReader.finetuned(ns.reader) if ns.reader else LMReader.smollm2(prompt="reader", evidence_budget=96)
    sums = {"alias": 0.0, "quoted": 0.0}
    for inst in val:
        assert inst.choices
        t = target_index(inst, True)

        def p(shown: object) -> float:
            lps = reader.option_logprobs(inst.request, inst.bundle(), inst.choices or [], shown)  # type: ignore[arg-type]
            return LMReader.graded_choice(lps, inst.choices or [], inst.reference_answer)

        out = {c: p(condition_state(inst, c)[0]) for c in ("oracle_rules", "wrong_rules")}
        base = condition_state(inst, "oracle")[0]
        for name, k in (("say_right", t), ("say_wrong", 1 - t)):
            out[name] = p(base.model_copy(update={"rules": (f"The answer is: {inst.choices[k]}",)}))  # type: ignore[union-attr]
        sums["alias"] += out["oracle_rules"] - out["wrong_rules"]
        sums["quoted"] += out["say_right"] - out["say_wrong"]
        print(inst.metadata.get("family"), {k: round(v, 3) for k, v in out.items()}, flush=True)
    n = max(len(val), 1)
    print(f"mean P(right) difference over {len(val)} rows: by alias (oracle_rules - wrong_rules) "
          f"{sums['alias'] / n:+.3f}; option quoted (say_right - say_wrong) {sums['quoted'] / n:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
