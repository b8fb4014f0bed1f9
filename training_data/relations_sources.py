"""Two more sources of relation pairs (issue 44, item 2): the phrasing set's tuning half and BEAM's
knowledge-update and contradiction questions. Same extractor, same candidate selection and the same
features as the other sources (training_data/relations.py); only the labelling is theirs.

- phrasing (evaluation/phrasing/cases.jsonl, **tuning half only**: the half is the same blake2b split as
  ``evaluation.phrasing.split``, re-derived here because training_data sits below evaluation): a case's
  dated blocks become its sessions (as the eval ingests them: a pair across two blocks has ``in_session`` 0)
  with the case's own turn ids; a fact of the labelled later turn against a
  fact of the labelled earlier turn gets the pair's label (SUPERSEDES -> supersedes, CONFLICTS_WITH ->
  conflicts_with either way round, none -> unrelated); every other pair is unrelated.
- BEAM (``<root>/100K/<n>/``): for every ``knowledge_update`` question, the original and the updated user
  turn (``source_chat_ids``) as a two-turn dialogue, one session per BEAM batch they lie in (a batch is a
  session at ingest; most updates cross batches); the updated turn's fact nearest the question's update
  reference against the original turn's fact nearest the original reference -> supersedes; every other
  pair between the two turns is left out (a long BEAM turn says many unrelated things; unknown).
  ``contradiction_resolution``: the two statements' turns, the pair nearest the question's topic ->
  conflicts_with, the rest left out. Only the conversations given (the dev copy holds 20).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from induction.extract import CandidateFact
from induction.offline import OfflineExtractor
from induction.session import Session, SessionTurn
from training_data.relations import Embed, Labeler, PairSet, label_dialogue

_REL = {"SUPERSEDES": "supersedes", "CONFLICTS_WITH": "conflicts_with", "none": "unrelated"}


def phrasing_half(case_id: str) -> str:
    """``evaluation.phrasing.split`` of a case id (blake2b, default digest, big-endian; even -> tune)."""
    return "tune" if int.from_bytes(hashlib.blake2b(case_id.encode("utf-8")).digest(), "big") % 2 == 0 else "test"


def _phrasing_sessions(case: dict[str, Any]) -> list[Session]:
    """One session per dated block, as ``evaluation.phrasing`` ingests a case (a pair across two blocks has
    ``in_session`` 0, as at ingest); the turn ids are the case's own."""
    out = []
    for s, sess in enumerate(case["sessions"]):
        at = datetime.fromisoformat(str(sess["at"]).replace("Z", "+00:00"))
        turns = tuple(SessionTurn(role=turn["role"], text=turn["text"], at=at + timedelta(seconds=t),
                                  turn_id=f"{case['id']}-s{s}:{t}") for t, turn in enumerate(sess["turns"]))
        out.append(Session(session_id=f"{case['id']}-train-s{s}", user_id=f"rel-phrasing-{case['id']}",
                           started_at=turns[0].at, turns=turns))
    return out


def _phrasing_labeler(case: dict[str, Any]) -> Callable[[list[CandidateFact], np.ndarray], Labeler]:
    pair = case.get("pair")

    def make(facts: list[CandidateFact], vecs: np.ndarray) -> Labeler:
        if pair is None:
            return lambda i, j: "unrelated"
        later = f"{case['id']}-s{pair['later'][0]}:{pair['later'][1]}"
        earlier = f"{case['id']}-s{pair['earlier'][0]}:{pair['earlier'][1]}"
        turn = [c.source_turn_ids[0] if c.source_turn_ids else "" for c in facts]
        rel = _REL[pair["relation"]]

        def lab(i: int, j: int) -> str:
            if turn[i] == later and turn[j] == earlier:
                return rel
            if rel == "conflicts_with" and turn[i] == earlier and turn[j] == later:
                return rel
            return "unrelated"
        return lab
    return make


def threshold_part(case_id: str) -> bool:
    """The tuning-half cases kept out of training when ``holdout`` is on: the part the cross kind's thresholds are
    chosen on (sha256 of ``h2-val:<id>``, odd; the split of runs/h2/split_phrasing.py, session 7)."""
    return int(hashlib.sha256(f"h2-val:{case_id}".encode()).hexdigest()[:8], 16) % 2 == 1


def phrasing_pairs(cases_file: str | Path, half: str, embed: Embed, extractor: OfflineExtractor, pair_embedding: bool,
                   min_similarity: float, max_candidates: int, holdout: bool = False) -> PairSet:
    """Pairs of the phrasing cases of ``half`` (``tune``; never ``test``); with ``holdout`` only the cases outside
    ``threshold_part``."""
    if half == "test":
        raise ValueError("the phrasing test half is never trained on")
    out = PairSet()
    for line in Path(cases_file).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        if (half != "all" and phrasing_half(case["id"]) != half) or (holdout and threshold_part(case["id"])):
            continue
        out.add(label_dialogue(_phrasing_sessions(case), _phrasing_labeler(case), f"phrasing/{case['id']}",
                               f"phrasing/{case['category']}", extractor, embed, pair_embedding, min_similarity,
                               max_candidates))
    return out


def _messages(chat: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {int(m["id"]): m for batch in chat for ex in batch.get("turns", []) for m in ex if "id" in m}


def _batches(chat: list[dict[str, Any]]) -> dict[int, int]:
    """Message id -> its batch (one batch is one session at ingest, ``induction.adapters.load_beam``)."""
    return {int(m["id"]): b for b, batch in enumerate(chat) for ex in batch.get("turns", []) for m in ex if "id" in m}


def _best_pair(facts: list[CandidateFact], vecs: np.ndarray, new_turn: str, old_turn: str, q_new: np.ndarray,
               q_old: np.ndarray) -> tuple[int, int] | None:
    turn = [c.source_turn_ids[0] if c.source_turn_ids else "" for c in facts]
    new = [i for i, t in enumerate(turn) if t == new_turn]
    old = [j for j, t in enumerate(turn) if t == old_turn]
    if not new or not old:
        return None
    i = max(new, key=lambda k: float(vecs[k] @ q_new))
    j = max(old, key=lambda k: float(vecs[k] @ q_old))
    return i, j


def beam_pairs(root: str | Path, embed: Embed, extractor: OfflineExtractor, pair_embedding: bool,
               min_similarity: float, max_candidates: int, conversations: list[str] | None = None) -> PairSet:
    out = PairSet()
    base = Path(root) / "100K" if (Path(root) / "100K").is_dir() else Path(root)
    for conv in sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: int(p.name) if p.name.isdigit() else 0):
        if conversations is not None and conv.name not in conversations:
            continue
        chat = json.loads((conv / "chat.json").read_text())
        msgs, batch = _messages(chat), _batches(chat)
        qs = json.loads((conv / "probing_questions.json").read_text())
        for kind, a_key, b_key, label in (("knowledge_update", "original_info", "updated_info", "supersedes"),
                                          ("contradiction_resolution", "first_statement", "second_statement",
                                           "conflicts_with")):
            for n, q in enumerate(qs.get(kind, [])):
                src = q.get("source_chat_ids")
                if not isinstance(src, dict) or not src.get(a_key) or not src.get(b_key):
                    continue
                ids = sorted({int(src[a_key][0]), int(src[b_key][0])})
                if len(ids) < 2 or any(i not in msgs for i in ids):
                    continue
                old_id, new_id = ids
                refs = [str(r) for r in q.get("conversation_references", [])]
                if kind == "knowledge_update" and len(refs) >= 2:
                    q_old, q_new = refs[0], refs[-1]
                else:
                    q_old = q_new = str(q.get("topic_questioned") or q.get("question", ""))
                qv = np.asarray(embed([q_new, q_old]), dtype=np.float32)
                t0 = datetime(2024, 1, 1)
                said = [SessionTurn(role=str(msgs[m]["role"]), text=str(msgs[m]["content"]),
                                    at=t0 + timedelta(days=7 * batch[m], minutes=k), turn_id=f"beam-{conv.name}:{m}")
                        for k, m in enumerate((old_id, new_id))]
                # the two turns in one session when one batch holds both, else one session each (as at ingest)
                blocks = [said] if batch[old_id] == batch[new_id] else [[said[0]], [said[1]]]
                sess = [Session(session_id=f"beam-{conv.name}-{kind}-{n}-{b}", user_id=f"rel-beam-{conv.name}",
                                started_at=ts[0].at, turns=tuple(ts)) for b, ts in enumerate(blocks)]
                new_t, old_t = f"beam-{conv.name}:{new_id}", f"beam-{conv.name}:{old_id}"

                def labeler(facts: list[CandidateFact], vecs: np.ndarray, new_t: str = new_t, old_t: str = old_t,
                            qv: np.ndarray = qv, label: str = label) -> Labeler:
                    best = _best_pair(facts, vecs, new_t, old_t, qv[0], qv[1])
                    return lambda i, j: label if best is not None and (i, j) == best else None

                out.add(label_dialogue(sess, labeler, f"beam/{conv.name}", f"beam/{kind}", extractor, embed,
                                       pair_embedding, min_similarity, max_candidates))
    return out
