"""The one decision loop, and the safety net around any adjudicator.

``decide_each`` walks a batch's facts in order: a fact starts from its base decision (a text duplicate
stays one), a proposer relates every other fact, and what a fact supersedes — or a fact the proposer
found to be a duplicate — is closed for the facts after it, so no two facts of a batch replace the same
state. The rules (``rules.py``) and the relation model (``model.py``) propose inside it; the LLM
(``llm.py``) labels the whole batch in one call and disposes of the labels itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from graph.snapshot import Snapshot
from induction.adjudication.decisions import Adjudication, Adjudicator, Decision, base_decision, keep_as_new
from induction.extract import ExtractionError
from induction.resolve import Resolution, ResolvedFact

# A proposer fills one fact's decision; the set holds the ids already closed (superseded, retracted or
# expired in the store, superseded or dropped earlier in this batch), which it must not relate to.
Propose = Callable[[ResolvedFact, Decision, set[str]], None]


def decide_each(res: Resolution, propose: Propose) -> list[Decision]:
    """Every fact of the batch, in order: base decision, then ``propose`` for a fact that is not a duplicate."""
    closed: set[str] = {f for f, v in res.validity.items() if v in ("superseded", "retracted", "expired")}
    decisions: list[Decision] = []
    for r in res.facts:
        d = base_decision(r)
        if d.label != "duplicate":
            propose(r, d, closed)
            closed.update(d.supersedes)
            if d.label == "duplicate":
                closed.add(d.fact_id)
        decisions.append(d)
    return decisions


def adjudicate_safely(primary: Adjudicator, res: Resolution, snap: Snapshot,
                      fallback: Literal["keep_new", "rules"], rules: Adjudicator) -> Adjudication:
    """Never lose facts: a failing adjudicator becomes keep-as-new (or the rules), with the reason."""
    try:
        return primary.adjudicate(res, snap)
    except ExtractionError as e:
        why = f"adjudication failed ({e.kind}): {e}"
        calls = 1
    except Exception as e:  # noqa: BLE001 - any adjudicator bug must not cost the user their facts
        why = f"adjudication crashed: {type(e).__name__}: {e}"
        calls = 0
    out = rules.adjudicate(res, snap) if fallback == "rules" else keep_as_new(res)
    out.fallback, out.llm_calls = why, calls
    return out
