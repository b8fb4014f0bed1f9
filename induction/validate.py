"""Validate before commit: evidence grounding, endpoint kinds, then the graph invariants.

Item-level problems (a quote not found in its turn, a relation between incompatible kinds, an edit
the graph rules refuse) drop that item and record why; the rest of the session still commits. A
batch that still breaks a graph invariant after that raises ``ValidationFailed`` and nothing commits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from difflib import SequenceMatcher

from graph.edits import AttachFact, Conflict, EditBatch, EditRejected, OntologyEdit, Supersede, apply_batch
from graph.models import Turn
from graph.rules import can_conflict, edge_kinds_allowed
from graph.snapshot import ChangeSet, Snapshot
from induction.extract import CandidateFact, RejectedItem


class ValidationFailed(ValueError):
    """The session's batch breaks a graph invariant even after dropping invalid items."""


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
                         "\u2026": "...", "\u00a0": " "})


def fuzzy_normalize(text: str) -> str:
    """Typographic quotes/dashes, accents, case, punctuation runs and spacing do not change a quote."""
    t = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    t = re.sub(r"[^\w\s']+", " ", t)
    return " ".join(t.split())


def evidence_in_turn(quote: str, turn_text: str, min_ratio: float = 0.9) -> bool:
    """True when the quote occurs in the turn after fuzzy normalization, or when matching blocks of at
    least 4 characters, in order, cover ``min_ratio`` of it (tolerates small edits, not inventions).

    >>> evidence_in_turn("I  love “hiking”!", "Well, I love \\"hiking\\" a lot.")
    True
    >>> evidence_in_turn("I hate hiking", "Well, I love hiking a lot.")
    False
    """
    q, t = fuzzy_normalize(quote), fuzzy_normalize(turn_text)
    if not q:
        return False
    if q in t:
        return True
    if len(q) < 12:
        return False
    sm = SequenceMatcher(None, q, t, autojunk=False)
    covered = sum(b.size for b in sm.get_matching_blocks() if b.size >= 4)
    return covered / len(q) >= min_ratio


def check_evidence(facts: Sequence[CandidateFact], turns: dict[str, Turn], min_ratio: float) -> tuple[list[str], list[RejectedItem]]:
    ok: list[str] = []
    rejected: list[RejectedItem] = []
    for f in facts:
        missing = [t for t in f.source_turn_ids if t not in turns]
        if missing:
            rejected.append(RejectedItem(step="validate", item=f.fact_id, reason=f"cites turns not in the session: {missing}"))
            continue
        joined = "\n".join(turns[t].text for t in f.source_turn_ids)
        if not evidence_in_turn(f.evidence, joined, min_ratio):
            rejected.append(RejectedItem(step="validate", item=f.fact_id,
                                         reason=f"evidence quote not found in its source turn: {f.evidence[:80]!r}"))
            continue
        ok.append(f.fact_id)
    return ok, rejected


def _kind_of(fid: str, snap: Snapshot, attached: Mapping[str, str]) -> str | None:
    if fid in attached:
        return attached[fid]
    f = snap.facts.get(fid)
    return f.kind if f else None


def check_kinds(snap: Snapshot, edits: list[OntologyEdit]) -> tuple[list[OntologyEdit], list[RejectedItem]]:
    """Endpoint kinds must be compatible (graph/rules.py); incompatible relations are dropped."""
    attached = {e.fact.fact_id: e.fact.kind for e in edits if isinstance(e, AttachFact)}
    out: list[OntologyEdit] = []
    rejected: list[RejectedItem] = []
    for e in edits:
        if isinstance(e, Supersede):
            a, b = _kind_of(e.new_fact_id, snap, attached), _kind_of(e.old_fact_id, snap, attached)
            if a is None or b is None or not edge_kinds_allowed(a, b):
                rejected.append(RejectedItem(step="validate", item=f"SUPERSEDE {e.new_fact_id} -> {e.old_fact_id}",
                                             reason=f"incompatible kinds {a} -> {b}"))
                continue
        if isinstance(e, Conflict):
            a, b = _kind_of(e.a, snap, attached), _kind_of(e.b, snap, attached)
            if a is None or b is None or not can_conflict(a, b):
                rejected.append(RejectedItem(step="validate", item=f"CONFLICT {e.a} ~ {e.b}", reason=f"incompatible kinds {a} ~ {b}"))
                continue
        out.append(e)
    return out, rejected


def _touches(e: OntologyEdit, fid: str) -> bool:
    if isinstance(e, Supersede):
        return fid in (e.new_fact_id, e.old_fact_id)
    if isinstance(e, Conflict):
        return fid in (e.a, e.b)
    return False


def apply_checked(snap: Snapshot, batch: EditBatch, now: datetime | None = None) -> tuple[Snapshot, ChangeSet, list[RejectedItem], EditBatch]:
    """``apply_batch``, dropping each edit the rules refuse (and relations of a refused fact), then again.
    Bounded by the number of edits; an invariant breach not tied to one edit raises ValidationFailed."""
    edits = list(batch.edits)
    rejected: list[RejectedItem] = []
    for _ in range(len(edits) + 1):
        b = batch.model_copy(update={"edits": edits})
        try:
            new_snap, cs = apply_batch(snap, b, now)
            return new_snap, cs, rejected, b
        except EditRejected as err:
            i = err.edit_index
            if i is None or not 0 <= i < len(edits):
                raise ValidationFailed(f"session {batch.session_id!r} breaks a graph invariant: {err}") from err
            bad = edits[i]
            if isinstance(bad, AttachFact):
                fid = bad.fact.fact_id
                rejected.append(RejectedItem(step="validate", item=fid, reason=str(err)))
                edits = [e for j, e in enumerate(edits) if j != i and not _touches(e, fid)]
            elif isinstance(bad, (Supersede, Conflict)) or bad.op in ("MERGE", "SPLIT"):
                rejected.append(RejectedItem(step="validate", item=bad.op, reason=str(err)))
                edits = edits[:i] + edits[i + 1:]
            else:
                raise ValidationFailed(f"session {batch.session_id!r}: {err}") from err
    raise ValidationFailed(f"session {batch.session_id!r}: validation did not converge")
