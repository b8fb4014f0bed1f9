"""Neutral-option instances: the answer depends on the memory, not on the wording of the options (issue 48).

Last session's finding: SmolLM2 scored 0.9 on MemSyco's option rows *with no memory at all*, because the
options give the answer away (the wrong option is always "Model Atlas"-style on conflict rows and "...
without respecting this limit" on scope rows). Here every family's two options are the competing values
themselves, written with one template for right and wrong, in an order drawn from a seeded hash:

==========  ======================================  ==================================================
family      options                                 what in memory decides
==========  ======================================  ==================================================
updates     the old and the new preference          which one is superseded (SUPERSEDES + dates). In
            (valid_memory_selection items)          half the rows, by a seeded hash, the two items swap
                                                    dates and edge ("flipped": a counterfactual row), so
                                                    that the request's wording, which echoes the current
                                                    item, cannot answer by itself
conflicts   the two candidates (expected vs         the decisive evidence (CONFLICTS_WITH the
            preference-aligned), their names        preference); the candidates' names are swapped in
            swapped in every text by a seeded hash  every text in half the rows, so a name's prior is no
                                                    cue
scope       the part the preference may decide      the preference's scope (Fact.scope = its portable
            (acceptable use) vs the part it must    use); the boundary is in the evidence as the user's
            not (the scope limit)                   constraint
holders     the user's belief vs what a document    holder: the belief is the user's, the conclusion a
            the user shared states                  document's (CONFLICTS_WITH)
expiry      "the {place} in {city}" for the plan's  validity: the plan expired, the home fact stands
            city vs the home city                   (training_data.state_cases, expired-plan)
==========  ======================================  ==================================================

The split is the usual one: a MemSyco row is held out when ``is_heldout("memsyco:<row id>", 0.3)`` (the 30 %
split by row hash every bench uses), an expiry case by the hash of its own id. Facts are assembled directly
(``training_data.base.assemble``, no ingestion): these instances test whether a reader and a policy use
the relational state, not whether the extractor finds it.

    python -m training_data.neutral --out runs/neutral [--seed 0] [--expiry-n 150] [--train-per-family 14]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from training_data.base import FactSpec, GoldUse, TrainingInstance, assemble
from training_data.build import is_heldout
from training_data.memsyco import _GOLD
from training_data.paths import memsyco_root
from training_data.state_cases import StateCaseSource

NEUTRAL_VERSION = "neutral-v1"
FAMILIES: dict[str, str] = {"valid_memory_selection": "updates", "memory_evidence_conflict": "conflicts",
                            "contextual_scope_control": "scope", "objective_fact_judgment": "holders"}
CATEGORY = {"updates": "update", "conflicts": "conflict", "scope": "scope", "holders": "belief-vs-evidence",
            "expiry": "update"}
HELDOUT_FRACTION = 0.3
_OLD = GoldUse(use=False, role="historical", priority="low")
_NEW = GoldUse(use=True, role="current-preference", priority="high")


def coin(*key: object) -> bool:
    """A seeded, stable coin: sha256 of the key's parts.

    >>> coin("a", 0) == coin("a", 0)
    True
    """
    return int(hashlib.sha256(":".join(map(str, key)).encode()).hexdigest()[:8], 16) % 2 == 1


def ordered(right: str, wrong: str, *key: object) -> tuple[str, str]:
    """The two options in a hash-drawn order (the position of the right one carries nothing)."""
    return (wrong, right) if coin("order", *key) else (right, wrong)


def swap_names(text: str, a: str, b: str) -> str:
    """Every mention of candidate ``a`` becomes ``b`` and vice versa, in one pass (full names first; a name
    'Model X' is also mentioned as plain 'X').

    >>> swap_names("Model Boreal beat Atlas; pick Model Atlas?", "Model Boreal", "Model Atlas")
    'Model Atlas beat Boreal; pick Model Boreal?'
    """
    pairs = {a: b, b: a}
    wa, wb = a.split(), b.split()
    if len(wa) == len(wb) == 2 and wa[0] == wb[0]:
        pairs.update({wa[1]: wb[1], wb[1]: wa[1]})
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(pairs, key=len, reverse=True)) + r")\b")
    return pat.sub(lambda m: pairs[m.group(1)], text)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _low(s: str) -> str:
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


class NeutralSource:
    """``instances(seed)``: the MemSyco rows of the four tasks plus ``expiry_n`` expired-plan cases."""

    name = "neutral"

    def __init__(self, root: str | Path | None = None, limit_per_task: int | None = None, expiry_n: int = 150,
                 max_distractors: int = 2):
        self.root = Path(root) if root is not None else memsyco_root()
        self.limit, self.expiry_n, self.max_distractors = limit_per_task, expiry_n, max_distractors

    def rows(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for task in FAMILIES:
            rows = [json.loads(x) for x in (self.root / f"{task}.jsonl").read_text().splitlines() if x.strip()]
            out.extend(rows[: self.limit] if self.limit else rows)
        return out

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        rows = self.rows()
        pool = [(r["metadata"].get("topic", r["task"]), it["content"]) for r in rows for it in r["memory"]["items"]
                if r["task"] in ("valid_memory_selection", "contextual_scope_control")]
        for row in rows:
            yield self.make(row, pool, seed)
        for i in range(self.expiry_n):
            yield self.expiry(seed, i)

    # --- MemSyco rows ---------------------------------------------------------------------------------
    def make(self, row: dict[str, Any], pool: Sequence[tuple[str, str]], seed: int) -> TrainingInstance:
        rng = random.Random(f"neutral:{seed}:{row['id']}")
        family = FAMILIES[row["task"]]
        ev, rub = row["evaluation"], row["evaluation"]["rubric"]
        request = row["question"]
        rels: list[tuple[str, str, str]] = []
        meta: dict[str, Any] = {}
        if family == "updates":
            old = next(i["content"] for i in row["memory"]["items"] if i["status"] == "outdated")
            new = next(i["content"] for i in row["memory"]["items"] if i["status"] == "current")
            flipped = coin("flip", seed, row["id"])
            if flipped:  # counterfactual: the row's old item is said last and supersedes the other
                old, new = new, old
            specs = [FactSpec(key="old", statement=old, days=rng.randint(150, 300), gold=_OLD),
                     FactSpec(key="new", statement=new, days=rng.randint(5, 120), gold=_NEW)]
            rels.append(("SUPERSEDES", "new", "old"))
            right, wrong = (f"Go by this: {_low(x.rstrip('.'))}." for x in (new, old))
            meta["flipped"] = flipped
        elif family == "conflicts":
            a, b = rub["expected_behavior"], ev["preference_aligned_answer"]
            swapped = coin("swap", seed, row["id"])

            def sw(t: str) -> str:
                return swap_names(t, a, b) if swapped else t

            specs = [FactSpec(key=f"m{n}", statement=sw(it["content"]), gold=_GOLD["defer_to_evidence"],
                              days=rng.randint(5, 120)) for n, it in enumerate(row["memory"]["items"])]
            specs.append(FactSpec(key="evidence", kind="event", days=rng.randint(1, 4), gold=_GOLD["evidence"],
                                  statement=f"Search results for the user's decision: {sw(rub['decisive_evidence'])}"))
            specs.append(FactSpec(key="side", kind="event", days=rng.randint(1, 4), gold=_GOLD["side_evidence"],
                                  statement=f"Search results also noted: {sw(rub['preference_supporting_evidence'])}"))
            rels += [("CONFLICTS_WITH", "evidence", s.key) for s in specs if s.key.startswith("m")]
            request = sw(request)
            right, wrong = f"Choose {sw(a)}.", f"Choose {sw(b)}."
            meta["swapped"] = swapped
        elif family == "scope":
            pref = row["memory"]["items"][0]["content"]
            use, limit = rub["acceptable_memory_use"][0], rub["scope_limits"][0]
            specs = [FactSpec(key="pref", statement=pref, scope=use.rstrip("."), days=rng.randint(5, 120),
                              gold=_GOLD["constrain_to_scope"]),
                     FactSpec(key="limit", statement=f"For this decision the user said: {limit}", kind="constraint",
                              days=rng.randint(1, 4), gold=GoldUse(use=True, role="constraint", priority="high"))]
            right, wrong = (f"Let the remembered preference decide this part: {_low(x.rstrip('.'))}." for x in (use, limit))
        else:  # holders
            belief = row["memory"]["items"][0]["content"]
            concl, myth = rub["required_conclusion"], rub["sycophancy_failure"]
            specs = [FactSpec(key="belief", statement=belief, kind="belief", days=rng.randint(10, 300),
                              gold=_GOLD["ignore_as_evidence"]),
                     FactSpec(key="doc", statement=f"A reference the user shared states: {concl.rstrip('.')}.",
                              kind="event", holder="document", days=rng.randint(3, 300), gold=_GOLD["evidence"])]
            rels.append(("CONFLICTS_WITH", "doc", "belief"))
            right, wrong = (f"The answer is: {_low(x.rstrip('.'))}." for x in (concl, myth))
        topic = row["metadata"].get("topic", row["task"])
        others = [c for t, c in pool if t != topic]
        for n in range(rng.randint(1 if others else 0, self.max_distractors if others else 0)):
            specs.append(FactSpec(key=f"d{n}", statement=rng.choice(others), days=rng.randint(5, 300),
                                  gold=_GOLD["distractor"]))
        key = f"neutral-{row['id']}"
        items, gold, _ = assemble(key, key, specs, rels, rng)  # type: ignore[arg-type]
        return TrainingInstance(
            instance_id=f"neutral:{row['id']}", source=self.name, category=CATEGORY[family],  # type: ignore[arg-type]
            user_id=key, request=request, evidence=items, reference_answer=right,
            choices=ordered(right, wrong, seed, row["id"]), scorer="choice", gold=gold,
            metadata={"family": family, "task": row["task"], "topic": topic, "row_id": row["id"],
                      "split": "heldout" if is_heldout(f"memsyco:{row['id']}", HELDOUT_FRACTION) else "train", **meta})

    # --- expiry ---------------------------------------------------------------------------------------
    def expiry(self, seed: int, i: int) -> TrainingInstance:
        src = StateCaseSource()
        rng = random.Random(f"neutral-expiry:{seed}:{i}")
        case = src._expired_plan(rng)
        src._distract(rng, case)
        iid = f"neutral-expiry:{seed}:{i}"
        key = f"neutral-expiry-{seed}-{i}"
        items, gold, _ = assemble(key, key, case.specs, case.relations, rng)  # type: ignore[arg-type]
        return TrainingInstance(
            instance_id=iid, source=self.name, category="update", user_id=key, request=case.request, evidence=items,
            reference_answer=case.correct, choices=ordered(case.correct, case.wrong[0], seed, iid), scorer="choice",
            gold=gold, metadata={"family": "expiry", "split": "heldout" if is_heldout(iid, HELDOUT_FRACTION) else "train"})


def build_neutral(out_dir: str | Path, seed: int = 0, expiry_n: int = 150, limit_per_task: int | None = None,
                  root: str | Path | None = None) -> dict[str, Any]:
    """Write ``train.jsonl`` / ``heldout.jsonl`` / ``manifest.json`` (counts per split/family, hashes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"train": out / "train.jsonl", "heldout": out / "heldout.jsonl"}
    counts: Counter[str] = Counter()
    with paths["train"].open("w") as tr, paths["heldout"].open("w") as ho:
        for inst in NeutralSource(root, limit_per_task, expiry_n).instances(seed):
            split = inst.metadata["split"]
            (ho if split == "heldout" else tr).write(inst.model_dump_json() + "\n")
            counts[f"{split}/{inst.metadata['family']}"] += 1
    files = {k: {"path": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for k, p in paths.items()}
    manifest = {"version": NEUTRAL_VERSION, "seed": seed, "expiry_n": expiry_n, "limit_per_task": limit_per_task,
                "counts": dict(sorted(counts.items())), "files": files,
                "hash": hashlib.sha256("".join(files[k]["sha256"] for k in sorted(files)).encode()).hexdigest()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def subset(path: str | Path, per_family: int, out: str | Path) -> Counter[str]:
    """The first ``per_family`` instances of each family of a JSONL, ranked by sha256 of the id (a CPU-sized
    GRPO set that never depends on file order); returns the counts."""
    rows = [TrainingInstance.model_validate_json(x) for x in Path(path).read_text().splitlines() if x.strip()]
    rows.sort(key=lambda i: hashlib.sha256(i.instance_id.encode()).hexdigest())
    n: Counter[str] = Counter()
    with Path(out).open("w") as fh:
        for i in rows:
            fam = str(i.metadata["family"])
            if n[fam] < per_family:
                n[fam] += 1
                fh.write(i.model_dump_json() + "\n")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--expiry-n", type=int, default=150)
    ap.add_argument("--limit-per-task", type=int, default=None)
    ap.add_argument("--memsyco-root", default=None)
    ap.add_argument("--train-per-family", type=int, default=0, help="Also write train-small.jsonl: N training "
                    "instances per family (ranked by id hash), the CPU-sized GRPO set.")
    ns = ap.parse_args(argv)
    print(json.dumps(build_neutral(ns.out, ns.seed, ns.expiry_n, ns.limit_per_task, ns.memsyco_root), indent=1))
    if ns.train_per_family:
        out = Path(ns.out)
        print(json.dumps(subset(out / "train.jsonl", ns.train_per_family, out / "train-small.jsonl")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
