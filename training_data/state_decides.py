"""Instances where the Reasoning State decides the answer (issue 48 item 2).

Why: on the neutral instances (``training_data.neutral``) the frozen MiniLM reader answers 98 % from the
evidence alone, so a state has nothing to earn and GRPO groups have no reward spread. Here the two competing
facts are written with *one* template — the same words, only the value differs — so a reader that reads the
statements (``policy.xreader_fast`` with ``text_only``: no dates, holders or graph marks) cannot tell them
apart, while the graph the policy reads holds what decides:

==========  ====================================================  =========================================
family      the graph says (the policy sees it, the reader not)    right / wrong fact
==========  ====================================================  =========================================
updates     ``SUPERSEDES`` (newer replaces older)                  the new value / the replaced one
conflicts   ``CONFLICTS_WITH`` both ways, one side retracted       the standing side / the retracted one
scope       each preference's ``scope``; the request names one     the matching scope / the other scope
holders     ``holder``: the user's own vs a named other person     the user's / the other holder's
expiry      a plan's validity window has passed                    the standing fact / the expired plan
==========  ====================================================  =========================================

Where the rule baseline (``policy.rule``) is wrong or tied — its marks are there, but the request decides:

================  ==============================================  =========================  ===============
family            the request                                      right / wrong fact         the rule
================  ==============================================  =========================  ===============
scope-paraphrase  names the right scope in other words ("at the   matching / other scope     both ``low``
                  office" for "at work")                                                      (a tie)
holders-other     asks for another person ("for Dana")             Dana's / the user's own    the user's
past-paraphrase   asks what held before the update, without a      the replaced / the new     the new one
                  past cue the rule knows ("back then")
================  ==============================================  =========================  ===============

Options are the two values in one template ("Go with ..."), in a hash-drawn order; 0–2 distractor facts
from other topics. Fact keys are ``right`` / ``wrong`` / ``d<n>``, metadata ``family`` is ``sd-<family>``
and ``roles`` gives the perfect state's line of each side (``policy.reader_tune.oracle_state`` reads it).
The split is the usual one: held out when ``is_heldout(instance_id, 0.3)`` (the 30 % row hash); of the rest,
the next 25 % of the same hash (``bucket``) are the frozen reader's training rows (``reader.jsonl``), apart
from the policy's (``train.jsonl``), so the reader's P(right) without a state is not inflated on the rows
the policy is rewarded on. ``metadata['deciding']`` names the two competing facts' aliases (the GRPO run's
per-fact prompts with ``data.deciding_only``).

    python -m training_data.state_decides --out runs/state-decides [--seed 0] [--per-family 120]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from training_data.base import FactSpec, GoldUse, TrainingInstance, assemble
from training_data.build import is_heldout
from training_data.neutral import HELDOUT_FRACTION, ordered

VERSION = "state-decides-v2"
# the rule baseline (policy/rule.py) gets the first five right; the last three are classes where it is wrong or
# tied (``RULE_WRONG``): the state must decide by reading the request against the graph, not by its marks alone
RULE_WRONG = ("scope-paraphrase", "holders-other", "past-paraphrase")
FAMILIES = ("updates", "conflicts", "scope", "holders", "expiry", *RULE_WRONG)
CATEGORY = {"updates": "update", "conflicts": "conflict", "scope": "scope", "holders": "belief-vs-evidence",
            "expiry": "update", "scope-paraphrase": "scope", "holders-other": "belief-vs-evidence",
            "past-paraphrase": "update"}
# third bucket of the same row hash: [0, 0.3) held out, [0.3, READER_CUT) the reader's training rows, the rest
# the policy's — the frozen reader never saw the rows the policy is rewarded on
READER_CUT = 0.55
# (topic, values): any two values of a topic compete; the topics are no benchmark's
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("summer holiday", ("a beach week in Crete", "a hiking trip in the Alps", "a city break in Lisbon",
                        "a road trip through Scotland")),
    ("weekday lunch", ("a vegetarian curry", "a chicken salad", "a bowl of ramen", "a lentil soup")),
    ("running shoes", ("a light racing flat", "a cushioned trail shoe", "a stability road shoe")),
    ("laptop", ("a small ultrabook", "a heavy gaming laptop", "a convertible tablet")),
    ("morning coffee", ("a flat white", "black filter coffee", "an oat milk latte", "a double espresso")),
    ("workout slot", ("early mornings", "late evenings", "the lunch break")),
    ("reading list", ("science fiction novels", "history books", "crime thrillers", "poetry collections")),
    ("focus music", ("lo-fi beats", "classical piano", "rain sounds", "film soundtracks")),
    ("weekend activity", ("indoor climbing", "museum visits", "long bike rides", "board game nights")),
    ("dinner cuisine", ("Thai food", "Italian food", "Mexican food", "Ethiopian food")),
    ("commute", ("cycling", "the train", "driving", "the bus")),
    ("film night", ("a horror film", "a romantic comedy", "a documentary", "an animated film")),
    ("note-taking app", ("a plain text editor", "a paper notebook", "a wiki app")),
    ("phone", ("a small phone", "a large-screen phone", "a flip phone")),
    ("garden project", ("a herb bed", "a vegetable patch", "a wildflower meadow")),
    ("language course", ("Spanish lessons", "Japanese lessons", "German lessons")),
)
# each scope said in other words: no content word of the scope (what ``policy.rule.scope_applies`` matches)
PARAPHRASE = {"at work": "at the office", "at home": "around the house", "on weekdays": "from Monday to Friday",
              "on weekends": "on a Saturday or Sunday", "when travelling": "on a trip abroad",
              "in town": "near where I live", "with the kids": "with my children", "alone": "by myself",
              "in winter": "in December", "in summer": "in July"}
# a request about the past in words ``policy.rule.PAST_CUES`` lacks
PAST_WORDS = ("Back then, which {topic} was my pick?", "Before I switched, which {topic} was my pick?",
              "Which {topic} was my pick the first time round?", "Which {topic} was my pick earlier on?")
SCOPES = (("at work", "at home"), ("on weekdays", "on weekends"), ("when travelling", "in town"),
          ("with the kids", "alone"), ("in winter", "in summer"))
OTHERS = ("Dana", "Marco", "Priya", "Tom", "Lena", "Kofi")
STATEMENT = "For the {topic}, the choice is {value}."
ROLES: dict[str, tuple[tuple[str, str, str], tuple[str, str, str]]] = {  # (use, role, priority) right, wrong
    "updates": (("use", "current-preference", "high"), ("ignore", "historical", "low")),
    "conflicts": (("use", "current-preference", "high"), ("ignore", "historical", "low")),
    "scope": (("use", "current-preference", "high"), ("ignore", "irrelevant", "low")),
    "holders": (("use", "current-preference", "high"), ("ignore", "irrelevant", "low")),
    "expiry": (("use", "current-preference", "high"), ("ignore", "historical", "low")),
    "scope-paraphrase": (("use", "current-preference", "high"), ("ignore", "irrelevant", "low")),
    "holders-other": (("use", "evidence", "high"), ("ignore", "irrelevant", "low")),
    "past-paraphrase": (("use", "historical", "high"), ("ignore", "irrelevant", "low")),
}
_DISTRACTOR = GoldUse(use=False, role="irrelevant", priority="low")


def _gold(line: tuple[str, str, str]) -> GoldUse:
    return GoldUse(use=line[0] == "use", role=line[1], priority=line[2])  # type: ignore[arg-type]


def make(family: str, seed: int, i: int) -> TrainingInstance:
    """One instance of ``family``; the same (family, seed, i) always gives the same instance."""
    iid = f"state-decides:{family}:{seed}:{i}"
    rng = random.Random(iid)
    t_idx = rng.randrange(len(TOPICS))
    topic, values = TOPICS[t_idx]
    right, wrong = rng.sample(values, 2)
    r_line, w_line = ROLES[family]
    st = {v: STATEMENT.format(topic=topic, value=v) for v in (right, wrong)}
    day = rng.randint(5, 200)
    r = dict(key="right", statement=st[right], gold=_gold(r_line), days=day)
    w = dict(key="wrong", statement=st[wrong], gold=_gold(w_line), days=day)
    rels: list[tuple[Any, str, str]] = []
    request = f"Which {topic} should I go with?"
    if family == "updates":
        w["days"] = day + rng.randint(10, 120)  # the replaced value is older
        rels.append(("SUPERSEDES", "right", "wrong"))
    elif family == "conflicts":
        w["retracted"] = True
        rels += [("CONFLICTS_WITH", "right", "wrong"), ("CONFLICTS_WITH", "wrong", "right")]
    elif family == "scope":
        s_right, s_wrong = rng.choice(SCOPES)[:: rng.choice((1, -1))]
        r["scope"], w["scope"] = s_right, s_wrong
        request = f"Which {topic} should I go with {s_right}?"
    elif family == "holders":
        w["holder"] = rng.choice(OTHERS)
        request = f"Which {topic} should I go with myself?"
    elif family == "scope-paraphrase":  # the request names the right scope in other words; the rule ties both
        s_right, s_wrong = rng.choice(SCOPES)[:: rng.choice((1, -1))]
        r["scope"], w["scope"] = s_right, s_wrong
        request = f"Which {topic} should I go with {PARAPHRASE[s_right]}?"
    elif family == "holders-other":  # the request is for another person: their preference, not the user's
        r["holder"] = other = rng.choice(OTHERS)
        request = f"Which {topic} should I pick for {other}?"
    elif family == "past-paraphrase":  # the request asks what held before the update, without a past cue
        r["days"] = day + rng.randint(10, 120)  # the right value is the replaced, older one
        rels.append(("SUPERSEDES", "wrong", "right"))
        request = rng.choice(PAST_WORDS).format(topic=topic)
    else:  # expiry: the plan's window has passed
        w["days"] = day + rng.randint(30, 120)
        w["valid_days"] = rng.randint(1, 20)
        w["kind"] = "plan"
    specs = [FactSpec(**r), FactSpec(**w)]  # type: ignore[arg-type]
    others = [(t, vs) for k, (t, vs) in enumerate(TOPICS) if k != t_idx]
    for n in range(rng.randint(0, 2)):
        t2, vs2 = rng.choice(others)
        specs.append(FactSpec(key=f"d{n}", statement=STATEMENT.format(topic=t2, value=rng.choice(vs2)),
                              days=rng.randint(5, 300), gold=_DISTRACTOR))
    items, gold, alias = assemble(iid, iid, specs, rels, rng)
    ok, bad = (f"Go with {v}." for v in (right, wrong))
    return TrainingInstance(
        instance_id=iid, source="state-decides", category=CATEGORY[family],  # type: ignore[arg-type]
        user_id=iid, request=request, evidence=items, reference_answer=ok, choices=ordered(ok, bad, seed, iid),
        scorer="choice", gold=gold,
        metadata={"family": f"sd-{family}", "topic": topic, "roles": {"right": list(r_line), "wrong": list(w_line)},
                  "deciding": [alias["right"], alias["wrong"]], "split": bucket(iid)})


def bucket(instance_id: str) -> str:
    """'heldout' (the usual 30 % row hash), 'reader' (the next 25 %: the frozen reader's training rows) or
    'train' (the policy's)."""
    if is_heldout(instance_id, HELDOUT_FRACTION):
        return "heldout"
    return "reader" if is_heldout(instance_id, READER_CUT) else "train"


def build(out_dir: str | Path, seed: int = 0, per_family: int = 120) -> dict[str, Any]:
    """Write ``train.jsonl`` (the policy's rows) / ``reader.jsonl`` (the reader's) / ``heldout.jsonl`` /
    ``manifest.json`` (counts per split and family, hashes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {k: out / f"{k}.jsonl" for k in ("train", "reader", "heldout")}
    counts: Counter[str] = Counter()
    handles = {k: p.open("w") for k, p in paths.items()}
    try:
        for fam in FAMILIES:
            for i in range(per_family):
                inst = make(fam, seed, i)
                split = inst.metadata["split"]
                handles[split].write(inst.model_dump_json() + "\n")
                counts[f"{split}/{fam}"] += 1
    finally:
        for h in handles.values():
            h.close()
    files = {k: {"path": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for k, p in paths.items()}
    manifest = {"version": VERSION, "seed": seed, "per_family": per_family, "counts": dict(sorted(counts.items())),
                "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-family", type=int, default=120)
    ap.add_argument("--train-per-family", type=int, default=0, help="Also write train-small.jsonl: N training "
                    "instances per family (ranked by id hash), the CPU-sized GRPO set.")
    ap.add_argument("--small-families", default="", help="Comma list: train-small.jsonl keeps only these families "
                    "(e.g. the rule-wrong ones and scope, where the warm start has something to learn).")
    ns = ap.parse_args(argv)
    print(json.dumps(build(ns.out, ns.seed, ns.per_family), indent=1))
    if ns.train_per_family:
        from training_data.neutral import subset

        src = Path(ns.out) / "train.jsonl"
        if ns.small_families:
            keep = {f"sd-{f}" for f in ns.small_families.split(",")}
            src = Path(ns.out) / "train-families.jsonl"
            src.write_text("".join(x + "\n" for x in (Path(ns.out) / "train.jsonl").read_text().splitlines()
                                   if json.loads(x)["metadata"]["family"] in keep))
        print(json.dumps(subset(src, ns.train_per_family, Path(ns.out) / "train-small.jsonl")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
