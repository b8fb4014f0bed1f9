"""What one SmolLM2 policy step costs on this CPU: prompt/state lengths, forward+backward, generation.

    python bench/policy_cost.py --data runs/policy-retrieved --config grpo-cpu-smollm2-ship

Reads ``heldout.jsonl`` (and ``train.jsonl`` for target lengths) from ``evomem build-instances`` and the
training config (prompt, threads, LoRA, target style), then prints one JSON object:

- prompt tokens (p50 / max) of the policy prompt the config renders, and the same for the answer-key
  warm-up targets (policy/targets.py) and the rule baseline's state — what generation would have to write;
- seconds per forward+backward of one prompt + target with the config's LoRA (median of ``--reps``);
- generation: prefill seconds and decode tokens/s with the KV cache (greedy, ``--gen-tokens`` forced).

Baseline to compare with: session-4 figures on the same box at load 13-15 (docs/design-notes.md, 26):
35-50 s per forward+backward of a 500-800-token prompt, ~1 s per generated token.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="Folder from `evomem build-instances`.")
    ap.add_argument("--config", default="grpo-cpu-smollm2-ship", help="Training config (prompt, LoRA, threads).")
    ap.add_argument("--reps", type=int, default=3, help="Timed forward+backward repetitions.")
    ap.add_argument("--gen-tokens", type=int, default=32, help="Tokens generated in the decode timing.")
    ap.add_argument("--set", nargs="*", default=[], dest="overrides", help="Config overrides, e.g. lora.top_layers=12.")
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import get_peft_model

    from policy.config import load_config
    from policy.models import load_model, load_tokenizer
    from policy.rewards import BaselineCache
    from policy.rule import RulePolicy
    from policy.targets import warmup_targets
    from policy.train import build_answer_model, prompt_messages, read_instances

    cfg = load_config(ns.config, ns.overrides)
    torch.set_num_threads(cfg.num_threads)
    held = read_instances(Path(ns.data) / "heldout.jsonl")
    train = read_instances(Path(ns.data) / "train.jsonl")
    tok = load_tokenizer(cfg.model)

    def n_tok(text: str) -> int:
        return len(tok(text, add_special_tokens=False).input_ids)

    def templated(inst: object) -> str:
        msgs = prompt_messages(inst, cfg, n_tok)  # type: ignore[arg-type]
        return str(tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True))

    prompts = [templated(i) for i in held]
    p_len = [n_tok(p) for p in prompts]
    answer, _ = build_answer_model(cfg)
    cache = BaselineCache()
    targets = [t for t, _ in warmup_targets(train, answer, cache, cfg.warmup)]
    t_len = [n_tok(t) for t in targets]
    rule = RulePolicy()
    r_len = [n_tok(rule.state_text(i.request, i.bundle())) for i in held]
    out: dict[str, object] = {
        "config": cfg.name, "threads": torch.get_num_threads(), "prompt": cfg.data.prompt,
        "prompt_tokens": {"p50": statistics.median(p_len), "max": max(p_len), "n": len(p_len)},
        "target_tokens": {"p50": statistics.median(t_len), "max": max(t_len), "style": cfg.warmup.target_style},
        "rule_state_tokens": {"p50": statistics.median(r_len), "max": max(r_len)},
        "load_avg": os.getloadavg()[0]}
    model = load_model(cfg.model, tok)
    model = get_peft_model(model, cfg.lora.peft_config(model.config.num_hidden_layers))
    k = p_len.index(int(statistics.median(p_len))) if int(statistics.median(p_len)) in p_len else 0
    ids = tok(prompts[k] + targets[0], return_tensors="pt", add_special_tokens=False).input_ids
    keep = t_len[0] + 1
    times = []
    model.train()
    for _ in range(ns.reps):
        t0 = time.perf_counter()
        logits = model(input_ids=ids, logits_to_keep=keep).logits
        loss = torch.nn.functional.cross_entropy(logits[0, :-1].float(), ids[0, -keep + 1:])
        loss.backward()
        model.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    out["fwd_bwd_s"] = {"p50": round(statistics.median(times), 2), "seq_tokens": int(ids.shape[1])}
    model.eval()
    enc = tok(prompts[k], return_tensors="pt", add_special_tokens=False)

    def generation_speed(m: Any) -> dict[str, float]:
        """Prefill time (one token) and decode rate (the rest) of a greedy generation from ``enc``."""
        kw = dict(do_sample=False, pad_token_id=tok.pad_token_id)
        with torch.no_grad():
            t0 = time.perf_counter()
            m.generate(**enc, max_new_tokens=1, min_new_tokens=1, **kw)
            prefill = time.perf_counter() - t0
            t0 = time.perf_counter()
            m.generate(**enc, max_new_tokens=ns.gen_tokens, min_new_tokens=ns.gen_tokens, **kw)
            total = time.perf_counter() - t0
        return {"prefill_s": round(prefill, 2),
                "decode_tokens_per_s": round((ns.gen_tokens - 1) / max(total - prefill, 1e-6), 1)}

    out["generation"] = {**generation_speed(model), "prompt_tokens": int(enc["input_ids"].shape[1])}
    # what serving and the held-out bench run: the adapter folded in
    out["generation_merged"] = generation_speed(model.merge_and_unload())
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
