"""The MemSyco ship gate's inputs, cheaply: held-out instances only, and the adapter's states as serving writes them.

    python bench/policy_gate_data.py build --out runs/gate --memsyco-root $EVOMEM_DATA_DIR/memsyco-bench --limit-per-task 60
    python bench/policy_gate_data.py adapter-states --data runs/gate --out runs/gate/adapter-states.jsonl
    python bench/policy_retrieved.py --data runs/gate --config grpo-cpu-smollm2-fact-holder --no-answer-key \\
        --head --learned-states runs/gate/adapter-states.jsonl

``build`` is ``evomem build-instances --limit-per-task N`` (``training_data/retrieved.py``, today's ingestion and
retrieval, MiniLM) with the training rows skipped: every MemSyco row is its own user in the build's store, so the
held-out instances are the ones a full build writes, in about a third of the time. ``adapter-states`` writes the
shipped adapter's state per instance through ``LocalLearnedPolicy.state`` (greedy, the fast path, cut to the
length limit: what serving answers with), one JSON row each (instance_id, state, ms, cpu_ms, facts), appended as
it goes so a run on a shared box can stop and resume; it takes the family with the fewest states first, so a run
cut short leaves a stratified subset (``bench/policy_retrieved.py --learned-states`` then scores the rows it has
when given ``--only-stated``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(ns: argparse.Namespace) -> int:
    import training_data.retrieved as tr

    every = tr.memsyco_cases
    tr.memsyco_cases = lambda *a, **k: (c for c in every(*a, **k) if c.split == "heldout")  # type: ignore[assignment]
    try:
        cfg = tr.RetrievedBuildConfig(memsyco_root=ns.memsyco_root, limit_per_task=ns.limit_per_task)
        man = tr.build_retrieved(ns.out, cfg, progress=lambda i, t: print(f"{i}/{t}", file=sys.stderr, flush=True))
    finally:
        tr.memsyco_cases = every  # type: ignore[assignment]
    print(json.dumps({"counts": man["counts"]["split/family"], "seconds": man["seconds"], "hash": man["hash"]}))
    return 0


def adapter_states(ns: argparse.Namespace) -> int:
    from policy.learned import LocalLearnedPolicy
    from policy.shipped import shipped_policy_dir
    from policy.train import read_instances

    insts = read_instances(Path(ns.data) / "heldout.jsonl")
    out = Path(ns.out)
    done = {json.loads(x)["instance_id"] for x in out.read_text().splitlines() if x.strip()} if out.exists() else set()
    pol = LocalLearnedPolicy.from_checkpoint(ns.checkpoint or shipped_policy_dir(), temperature=0.0, max_new_tokens=192)

    def family(i: object) -> str:
        return str(i.metadata.get("family", i.category))  # type: ignore[attr-defined]

    todo = [i for i in insts if i.instance_id not in done]
    have = Counter(family(i) for i in insts if i.instance_id in done)
    while todo:
        inst = min(todo, key=lambda i: have[family(i)])  # stable: file order within a family
        todo.remove(inst)
        t0, c0 = time.perf_counter(), time.process_time()
        text = pol.state(inst.request, inst.bundle(), inst.choices).render()
        ms, cpu = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        with out.open("a") as fh:
            fh.write(json.dumps({"instance_id": inst.instance_id, "state": text, "ms": round(ms, 1),
                                 "cpu_ms": round(cpu, 1), "facts": len(inst.evidence)}) + "\n")
        have[family(inst)] += 1
        print(f"{len(insts) - len(todo)}/{len(insts)} {inst.instance_id} {ms:.0f} ms", file=sys.stderr, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="Held-out MemSyco instances from today's pipeline.")
    b.add_argument("--out", required=True)
    b.add_argument("--memsyco-root", required=True)
    b.add_argument("--limit-per-task", type=int, default=60, help="First N rows of each task (60: the rows the "
                   "shipped adapter's held-out figures used).")
    s = sub.add_parser("adapter-states", help="The shipped adapter's states, as serving writes them (resumable).")
    s.add_argument("--data", required=True, help="A folder with heldout.jsonl.")
    s.add_argument("--out", required=True, help="JSONL, appended row by row.")
    s.add_argument("--checkpoint", default=None, help="Another adapter folder (default: the shipped one).")
    ns = ap.parse_args(argv)
    return build(ns) if ns.cmd == "build" else adapter_states(ns)


if __name__ == "__main__":
    sys.exit(main())
