"""BEAM: chats -> harness episodes (loading is ``induction.adapters.load_beam``).

A chat's batches are its sessions (dated by their time anchors) and its probing questions are posed
after the whole chat, as the benchmark does; so each question is asked after all of its chat's
sessions. Every question with ``source_chat_ids`` is scored (the category is the memory ability);
abstention questions have no evidence and are counted, not scored. Evidence in assistant messages
counts like any other turn: a memory that keeps nothing of what the assistant said will miss it,
and the report shows that per ability.

``--data`` is a tier folder (``beam/100K``: ``<n>/chat.json`` + ``probing_questions.json``) or a
folder of tier folders (each tier's chats become ``<tier>/<n>``).
"""

from __future__ import annotations

from pathlib import Path

from evaluation.harness import EvalQuestion, Episode
from scoring.answers import token_f1
from induction.adapters import load_beam
from induction.session import SessionFormatError


def _tiers(root: Path) -> list[tuple[str, Path]]:
    if not root.is_dir():
        raise SessionFormatError(str(root), None, "", "no such folder")
    if any((d / "chat.json").is_file() for d in root.iterdir() if d.is_dir()):
        return [("", root)]
    tiers = sorted((d.name, d) for d in root.iterdir() if d.is_dir() and any((x / "chat.json").is_file()
                                                                           for x in d.iterdir() if x.is_dir()))
    if not tiers:
        raise SessionFormatError(str(root), None, "", "no <n>/chat.json folders here or one level down")
    return tiers


def beam_episodes(data: str | Path, user_prefix: str = "beam-") -> list[Episode]:
    out: list[Episode] = []
    for tier, folder in _tiers(Path(data)):
        for c in load_beam(folder, user_prefix=f"{user_prefix}{tier}-" if tier else user_prefix):
            name = f"{tier}/{c.conversation}" if tier else c.conversation
            if not c.sessions:
                raise SessionFormatError(str(folder / c.conversation / "chat.json"), None, "", "no batches with turns")
            qs = tuple(EvalQuestion(qid=f"{name}#{q.ability}#{q.index}", question=q.question, answer=q.gold,
                                    category=q.ability, evidence_ids=q.evidence_ids, scored=bool(q.evidence_ids),
                                    meta={"rubric": list(q.rubric), "difficulty": q.difficulty})
                       for q in c.questions)
            out.append(Episode(episode_id=name, user_id=c.user_id, sessions=c.sessions, questions=qs))
    return out


def score_answer(q: EvalQuestion, prediction: str) -> float | None:
    return None if q.answer is None else token_f1(prediction, q.answer)


def reference(q: EvalQuestion) -> str | None:
    return q.answer
