"""A policy in milliseconds? The shipped per-fact policy, old path vs batched classification (issue 45 item 3).

On the example history's requests (``evomem/examples/history.json``, loaded as ``make demo`` loads it, k=4)
both paths run in the same process: the old one generates each fact's line (``LocalLearnedPolicy.state_texts``),
the new one scores the grammar's lines in a few batched forwards (``policy/fastfact.py``). Prints per request
the latency of each path, whether their lines agree, and the ship gate's verdict (``policy/needs.py``) for each;
then p50 of both. ``--data`` adds held-out instances (same comparison, and ``--states-out`` writes the fast
path's states for ``bench/policy_reader.py``).

    OMP_NUM_THREADS=2 python bench/policy_fast.py [--repeat 3] [--data runs/inst/heldout.jsonl \
        --limit 10 --states-out runs/learned_states.jsonl] [--skip-old] [--before-module /tmp/fastfact_old.py]
    OMP_NUM_THREADS=2 python bench/policy_fast.py --skip-old --head       # + the distilled head beside it
    OMP_NUM_THREADS=2 python bench/policy_fast.py --head --head-only --repeat 5   # the head alone

torch's threads follow OMP_NUM_THREADS (as in serving) unless ``--threads`` sets them. Each latency is
given as wall time (``*_ms``) and as the process's CPU time (``*_cpu_ms``): on a shared, loaded box the
CPU time is the steadier figure. ``--before-module`` times an earlier ``policy/fastfact.py`` (e.g.
``git show <rev>:policy/fastfact.py > /tmp/fastfact_old.py``) in the same run, on the same model, and
checks it gives the same lines: a before/after ratio from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=None, help="Policy checkpoint (default: the shipped one).")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: OMP_NUM_THREADS, as serving).")
    ap.add_argument("--before-module", default=None, help="An earlier policy/fastfact.py to time as 'before'.")
    ap.add_argument("--repeat", type=int, default=1, help="Timed runs per request and path (the median is kept; "
                    "the old, generating path runs once: it is the reference, not the figure).")
    ap.add_argument("--data", nargs="*", default=[], help="heldout.jsonl files: also compare on these instances.")
    ap.add_argument("--limit", type=int, default=0, help="At most N instances from --data.")
    ap.add_argument("--states-out", default=None, help="Append the fast path's states on --data as JSONL (row by row).")
    ap.add_argument("--merge", action="store_true", help="The fast path (and --before-module) on a copy of the "
                    "adapter merged into the base weights at load; the old path stays the unmerged adapter.")
    ap.add_argument("--skip-old", action="store_true", help="Time the fast path only (no old-path comparison).")
    ap.add_argument("--no-examples", action="store_true", help="Skip the example history.")
    ap.add_argument("--head", nargs="?", const="", default=None, help="Also time the distilled head "
                    "(policy/head.py; default: the shipped head-v1, or the folder given) and compare its lines "
                    "with the fast path's (the adapter's greedy lines) per fact, and its gate verdicts.")
    ap.add_argument("--head-only", action="store_true", help="Time the head alone on the example requests (no "
                    "SmolLM2 load; its gate verdicts, no comparison): what serving with policy_kind head costs.")
    ns = ap.parse_args(argv)
    if ns.head_only:
        return head_only(ns)

    import torch

    from policy.fastfact import FastFactPolicy
    from policy.learned import LocalLearnedPolicy
    from policy.shipped import shipped_policy_dir

    if ns.threads:
        torch.set_num_threads(ns.threads)
    ckpt = ns.checkpoint or str(shipped_policy_dir())
    old = LocalLearnedPolicy.from_checkpoint(ckpt, temperature=0.0, max_new_tokens=192)
    fast_pol = (LocalLearnedPolicy.from_checkpoint(ckpt, temperature=0.0, max_new_tokens=192, merge=True)
                if ns.merge else old)
    fast = FastFactPolicy(fast_pol)
    if ns.before_module:
        import importlib.util

        spec = importlib.util.spec_from_file_location("fastfact_before", ns.before_module)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        ns.before = mod.FastFactPolicy(fast_pol)
    if ns.head is not None:
        from policy.head import HeadPolicy

        ns.head_policy = HeadPolicy(ns.head or None)
        ns.head_policy.embedder.embed(["warm-up"])  # the retrieval embedder is loaded at serve time already
    queries = [] if ns.no_examples else example_queries()
    report: dict[str, Any] = {"checkpoint": ckpt, "merged": ns.merge, "threads": torch.get_num_threads(), "load": os.getloadavg()}
    rows = [compare(old, fast, q, ns) for q in queries]
    if rows:
        report["examples"] = rows
        report["examples_p50_ms"] = {k.removesuffix("_ms"): statistics.median(r[k] for r in rows)  # type: ignore[misc]
                                     for k in rows[0] if k.endswith("_ms")}
        if ns.before_module:
            report["examples_same_lines_as_before"] = sum(r["same_as_before"] for r in rows)
        if not ns.skip_old:
            report["examples_same_lines"] = sum(r["same"] for r in rows)
        report["examples_gate_fast_misses"] = sum(bool(r["fast_misses"]) for r in rows)
        if ns.head is not None:
            report["examples_head_same_facts"] = [sum(r["head_same_facts"] for r in rows), sum(r["facts"] for r in rows)]
            report["examples_head_same_requests"] = sum(r["head_same_facts"] == r["facts"] for r in rows)
            report["examples_gate_head_misses"] = sum(bool(r["head_misses"]) for r in rows)
    if ns.data:
        from training_data.base import TrainingInstance

        insts = [TrainingInstance.model_validate_json(x) for f in ns.data for x in Path(f).read_text().splitlines()
                 if x.strip()]
        insts = insts[: ns.limit] if ns.limit else insts
        drows = []
        for inst in insts:
            q = {"request": inst.request, "bundle": inst.bundle(), "choices": inst.choices, "needs": None,
                 "id": inst.instance_id}
            r = compare(old, fast, q, ns)
            drows.append(r)
            if ns.states_out:  # row by row: a long run on a shared box keeps what it finished
                with open(ns.states_out, "a") as fh:
                    fh.write(json.dumps({"instance_id": r["id"], "state": r["fast_state"]}) + "\n")
            print(json.dumps({k: v for k, v in r.items() if k != "fast_state"}), file=sys.stderr, flush=True)
        report["data"] = {"n": len(drows), "facts_p50": statistics.median(r["facts"] for r in drows) if drows else 0,
                          "fast_p50_ms": statistics.median(r["fast_ms"] for r in drows) if drows else 0}
        if not ns.skip_old and drows:
            report["data"]["old_p50_ms"] = statistics.median(r["old_ms"] for r in drows)  # type: ignore[index]
            report["data"]["same_lines_facts"] = [sum(r["same_lines"] for r in drows), sum(r["facts"] for r in drows)]
    for r in rows:
        r.pop("fast_state", None)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0


def head_only(ns: argparse.Namespace) -> int:
    """The head on the example requests: latency per request (median of ``--repeat``) and gate misses."""
    import torch

    from policy.head import HeadPolicy

    if ns.threads:
        torch.set_num_threads(ns.threads)
    head = HeadPolicy(ns.head or None)
    if head.manifest.columns != "struct":
        head.embedder.embed(["warm-up"])  # the retrieval embedder is loaded at serve time already
    rows = []
    for q in example_queries():
        bundle, request = q["bundle"], str(q["request"])
        times, cpu = [], []
        for _ in range(ns.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            state = head.state(request, bundle)  # type: ignore[arg-type]
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        items = [(it.alias, it.fact.statement) for it in bundle.items]  # type: ignore[attr-defined]
        rows.append({"id": q["id"], "facts": len(items), "head_ms": round(statistics.median(times), 2),
                     "head_cpu_ms": round(statistics.median(cpu), 2),
                     "head_misses": q["needs"].misses(items, state)})  # type: ignore[attr-defined]
    print(json.dumps({"head": head.manifest.name, "threads": torch.get_num_threads(), "repeat": ns.repeat,
                      "examples": rows, "head_p50_ms": statistics.median(r["head_ms"] for r in rows),
                      "head_cpu_p50_ms": statistics.median(r["head_cpu_ms"] for r in rows),
                      "examples_gate_head_misses": sum(bool(r["head_misses"]) for r in rows),
                      "load_after": os.getloadavg()}, indent=1))
    return 0


def example_queries() -> list[dict[str, object]]:
    """The example history's requests with their bundles (MiniLM store, k=4, as ``make demo``)."""
    from evomem.examples import load_fixture, load_history
    from evomem.settings import Settings
    from memcore.memory import Memory
    from policy.needs import StateNeeds

    out = []
    with tempfile.TemporaryDirectory(prefix="evomem-fast-") as tmp:
        mem = Memory.from_settings(Settings.from_env({}, store={"path": str(Path(tmp) / "s")}))
        history = load_history()
        load_fixture(mem, history)
        for req in history["requests"]:
            out.append({"request": req["request"], "bundle": mem.retrieve(req["user_id"], req["request"], k=4),
                        "choices": None, "needs": StateNeeds.model_validate(req.get("needs") or {}),
                        "id": req["request"]})
        mem.close()
    return out


def compare(old: object, fast: object, q: dict[str, object], ns: argparse.Namespace) -> dict[str, Any]:
    from policy.perfact import fact_line_text
    from policy.state import parse_state

    bundle, request, choices = q["bundle"], q["request"], q["choices"]
    aliases = [it.alias for it in bundle.items]  # type: ignore[attr-defined]

    def timed(fn: object, repeat: int = ns.repeat) -> tuple[object, float, float]:
        times, cpu, res = [], [], None
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            res = fn()  # type: ignore[operator]
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        return res, statistics.median(times), statistics.median(cpu)

    lines, fast_ms, fast_cpu = timed(lambda: fast.line_texts(request, bundle, choices))  # type: ignore[attr-defined]
    fast_text = "\n".join(f"{a}: {x}" for a, x in zip(aliases, lines))  # type: ignore[call-overload]
    row: dict[str, Any] = {"id": q["id"], "facts": len(aliases), "fast_ms": round(fast_ms, 1),
                              "fast_cpu_ms": round(fast_cpu, 1), "fast_state": fast_text}
    before = getattr(ns, "before", None)
    if before is not None:
        blines, before_ms, before_cpu = timed(lambda: before.line_texts(request, bundle, choices))
        row.update(before_ms=round(before_ms, 1), before_cpu_ms=round(before_cpu, 1), same_as_before=blines == lines)
    head = getattr(ns, "head_policy", None)
    if head is not None:
        hlines, head_ms, head_cpu = timed(lambda: head.line_texts(request, bundle, choices))
        row.update(head_ms=round(head_ms, 1), head_cpu_ms=round(head_cpu, 1),
                   head_same_facts=sum(a.strip() == b.strip() for a, b in zip(hlines, lines)))  # type: ignore[call-overload]
        if row["head_same_facts"] != len(aliases):
            row["head_state"] = "\n".join(f"{a}: {x}" for a, x in zip(aliases, hlines))  # type: ignore[call-overload]
            row["fast_lines"] = lines
    needs = q.get("needs")
    items = [(it.alias, it.fact.statement) for it in bundle.items]  # type: ignore[attr-defined]
    if needs is not None:
        row["fast_misses"] = needs.misses(items, parse_state(fast_text, aliases))  # type: ignore[attr-defined]
        if head is not None:
            htext = "\n".join(f"{a}: {x}" for a, x in zip(aliases, hlines))  # type: ignore[call-overload]
            row["head_misses"] = needs.misses(items, parse_state(htext, aliases))  # type: ignore[attr-defined]
    if not ns.skip_old:
        text, old_ms, old_cpu = timed(lambda: old.state_texts([(request, bundle, choices)],  # type: ignore[attr-defined]
                                                              batch_size=max(len(aliases), 1))[0], 1)
        old_lines = [fact_line_text(x.split(": ", 1)[1]) if ": " in x else x for x in str(text).splitlines()]
        same = [a.strip() == b.strip() for a, b in zip(old_lines, lines)]  # type: ignore[arg-type,call-overload]
        row.update(old_ms=round(old_ms, 1), old_cpu_ms=round(old_cpu, 1), same=all(same) and len(same) == len(aliases), same_lines=sum(same))
        if not row["same"]:
            row["old_state"] = text
        if needs is not None:
            try:
                row["old_misses"] = needs.misses(items, parse_state(str(text), aliases))  # type: ignore[attr-defined]
            except ValueError as e:
                row["old_misses"] = [f"did not parse: {e}"]
    return row


if __name__ == "__main__":
    sys.exit(main())
