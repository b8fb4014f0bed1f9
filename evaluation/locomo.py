"""LoCoMo: conversations -> harness episodes (loading is ``induction.adapters.load_locomo``).

Each conversation is one memory user; its sessions are ingested in time order and its questions,
which carry no timestamps, are asked after all of its sessions. Categories 1-4 are scored at the top
level; category 5 (adversarial) is reported on its own under ``by_category``.

Evidence: the adapter normalises ids (``'D8:6; D9:17'`` -> two ids, ``'D:11:26'`` -> ``D11:26``,
``'D30:05'`` -> ``D30:5``). A raw evidence piece that yields no id at all (e.g. a bare ``'D'``) is
kept as *malformed* on the question, so the report counts it instead of losing it; an id that names
no turn of the ingested sessions is counted as unresolved by the harness.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluation.harness import EvalQuestion, Episode
from evaluation.metrics import locomo_f1
from induction.adapters import load_locomo, normalize_evidence
from induction.session import SessionFormatError

SCORED_CATEGORIES = frozenset({1, 2, 3, 4})
NOT_MENTIONED = "Not mentioned in the conversation"
_PIECES = re.compile(r"[;,]|\s+(?=D)")


def locomo_file(data: str | Path) -> Path:
    """``--data`` may name the JSON file or a folder holding ``locomo10.json`` (or exactly one ``*.json``)."""
    p = Path(data)
    if p.is_file():
        return p
    if not p.is_dir():
        raise SessionFormatError(str(p), None, "", "no such file or folder")
    if (p / "locomo10.json").is_file():
        return p / "locomo10.json"
    cands = sorted(x for x in p.glob("*.json") if x.name != "manifest.json")
    if len(cands) != 1:
        raise SessionFormatError(str(p), None, "", f"expected locomo10.json or exactly one *.json here, found "
                                 f"{[c.name for c in cands] or 'none'}")
    return cands[0]


def malformed_pieces(raw: tuple[str, ...]) -> tuple[str, ...]:
    """Raw evidence pieces that name no dialogue id.

    >>> malformed_pieces(("D8:6; D9:17", "D", "D:11:26"))
    ('D',)
    """
    out = []
    for item in raw:
        for piece in _PIECES.split(item):
            if piece.strip() and not normalize_evidence([piece]):
                out.append(piece.strip())
    return tuple(out)


def locomo_episodes(data: str | Path, user_prefix: str = "") -> list[Episode]:
    path = locomo_file(data)
    convs = load_locomo(path, user_prefix=user_prefix)
    if not convs:
        raise SessionFormatError(str(path), None, "", "no conversations in file")
    out = []
    for ci, c in enumerate(convs):
        if not c.sessions:
            raise SessionFormatError(str(path), ci, "conversation", f"{c.sample_id}: no session with turns")
        qs = tuple(EvalQuestion(qid=f"{c.sample_id}#{n}", question=q.question, answer=q.answer, category=str(q.category),
                                evidence_ids=q.evidence_ids, malformed_evidence=malformed_pieces(q.raw_evidence),
                                scored=q.category in SCORED_CATEGORIES, meta={"category": q.category})
                   for n, q in enumerate(c.questions))
        out.append(Episode(episode_id=c.sample_id, user_id=c.user_id, sessions=c.sessions, questions=qs))
    return out


def score_answer(q: EvalQuestion, prediction: str) -> float | None:
    cat = int(q.meta.get("category", q.category))
    if cat != 5 and q.answer is None:
        return None
    return locomo_f1(prediction, q.answer, cat)


def reference(q: EvalQuestion) -> str | None:
    return NOT_MENTIONED if q.category == "5" else q.answer
