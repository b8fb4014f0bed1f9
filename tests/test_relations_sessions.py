"""Cross-session relation training pairs (issue 44): a pair whose older fact came in an earlier session carries
``in_session`` 0, as a stored partner does at ingest; the sources give such pairs (LoCoMo negatives across
sessions, phrasing cases across dated blocks, BEAM updates across batches, MemSyco rows split at the change)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from induction.extract import CandidateFact
from induction.offline import OfflineExtractor
from induction.relations.features import LABELS
from induction.session import Session, SessionTurn
from llmclients.embeddings import HashEmbedder
from training_data.relations import in_session, label_dialogue, locomo_pairs
from training_data.relations_sources import beam_pairs, phrasing_half, phrasing_pairs


def _embed(texts: Sequence[str]) -> np.ndarray:
    return np.asarray(HashEmbedder(64).embed(list(texts)), dtype=np.float32)


def _session(sid: str, texts: list[str], day: int) -> Session:
    t0 = datetime(2025, 1, 1) + timedelta(days=day)
    return Session(session_id=sid, user_id="u", started_at=t0, turns=tuple(
        SessionTurn(role="user", text=t, at=t0 + timedelta(minutes=k), turn_id=f"{sid}:{k}") for k, t in enumerate(texts)))


def _flags(ps: object) -> list[bool]:
    return [in_session(x) for x in ps.X]  # type: ignore[attr-defined]


def test_a_pair_across_two_sessions_is_not_in_session() -> None:
    a = _session("a", ["I live in Leeds and I love the city.", "I work at a bakery in Leeds."], 0)
    b = _session("b", ["I moved to Sheffield, I live in Sheffield now."], 30)

    def all_unrelated(facts: list[CandidateFact], vecs: np.ndarray):  # type: ignore[no-untyped-def]
        return lambda i, j: "unrelated"

    one = label_dialogue(a, all_unrelated, "g", "s", OfflineExtractor(), _embed, False, -1.0, 12)
    assert one.y and all(_flags(one))  # one session: every pair in session, as before
    two = label_dialogue([a, b], all_unrelated, "g", "s", OfflineExtractor(), _embed, False, -1.0, 12)
    cross = [t for t, f in zip(two.text, _flags(two)) if not f]
    assert cross and all("Sheffield" in new for new, _ in cross)  # the later session's facts against the earlier's
    assert any(_flags(two))


def test_a_split_copy_repeats_the_pairs_across_the_change_turn_out_of_session() -> None:
    s = _session("m", ["I love hiking in the hills every weekend.", "My sister visits on Sundays.",
                       "These days I'd rather spend weekends at the beach than hiking."], 0)

    def lab(facts: list[CandidateFact], vecs: np.ndarray):  # type: ignore[no-untyped-def]
        turn = [c.order[0] for c in facts]
        return lambda i, j: "supersedes" if (turn[i], turn[j]) == (2, 0) else "unrelated"

    plain = label_dialogue(s, lab, "g", "s", OfflineExtractor(), _embed, False, -1.0, 12)
    split = label_dialogue(s, lab, "g", "s", OfflineExtractor(), _embed, False, -1.0, 12, split_copy=True)
    assert all(_flags(plain))
    copies = [(t, y) for t, y, f in zip(split.text, split.y, _flags(split)) if not f]
    assert len(split.y) == len(plain.y) + len(copies)
    assert (LABELS.index("supersedes") in [y for _, y in copies]) and all("beach" in new for (new, _), _ in copies)
    # pairs within the part before the change turn are not copied
    assert sorted(zip(plain.text, plain.y)) == sorted((t, y) for t, y, f in zip(split.text, split.y, _flags(split)) if f)


def test_phrasing_pairs_across_dated_blocks_are_out_of_session(tmp_path: Path) -> None:
    cid = next(f"t{i}" for i in range(100) if phrasing_half(f"t{i}") == "tune")
    case = {"id": cid, "category": "update", "style": "plain",
            "sessions": [{"at": "2025-01-01T10:00:00Z", "turns": [{"role": "user", "text": "I live in Leeds and I love it."}]},
                         {"at": "2025-06-01T10:00:00Z", "turns": [{"role": "user", "text":
                                                                   "I moved to Sheffield, I live in Sheffield now."}]}],
            "pair": {"later": [1, 0], "earlier": [0, 0], "relation": "SUPERSEDES"}}
    f = tmp_path / "cases.jsonl"
    f.write_text(json.dumps(case) + "\n")
    ps = phrasing_pairs(f, "tune", _embed, OfflineExtractor(), False, -1.0, 12)
    sup = [fl for y, fl in zip(ps.y, _flags(ps)) if y == LABELS.index("supersedes")]
    assert sup and not any(sup)


def _beam(tmp_path: Path, batches: list[list[dict[str, object]]]) -> Path:
    conv = tmp_path / "100K" / "1"
    conv.mkdir(parents=True)
    (conv / "chat.json").write_text(json.dumps([{"batch_number": n + 1, "turns": [b]} for n, b in enumerate(batches)]))
    (conv / "probing_questions.json").write_text(json.dumps({"knowledge_update": [
        {"question": "How fast is the API?", "conversation_references": ["API answers in 400ms", "API now 250ms"],
         "source_chat_ids": {"original_info": [1], "updated_info": [3]}}]}))
    return tmp_path


def test_beam_updates_across_batches_are_out_of_session(tmp_path: Path) -> None:
    m1 = {"role": "user", "id": 1, "content": "My API answers in 400ms on average."}
    m2 = {"role": "assistant", "id": 2, "content": "Caching could help."}
    m3 = {"role": "user", "id": 3, "content": "After caching, my API now answers in 250ms on average."}
    one = beam_pairs(_beam(tmp_path / "one", [[m1, m2, m3]]), _embed, OfflineExtractor(), False, -1.0, 12)
    two = beam_pairs(_beam(tmp_path / "two", [[m1, m2], [m3]]), _embed, OfflineExtractor(), False, -1.0, 12)
    assert one.y == two.y == [LABELS.index("supersedes")]
    assert _flags(one) == [True] and _flags(two) == [False]


def _locomo(tmp_path: Path) -> Path:
    lines = [["I love hiking in the hills.", "Hiking keeps me sane."], ["I went hiking again last weekend, so fun."],
             ["Hiking with my dog is the best."]]
    conv: dict[str, object] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for n, texts in enumerate(lines, start=1):
        turns = []
        for k, t in enumerate(texts):
            turns += [{"speaker": "Ann", "text": t, "dia_id": f"D{n}:{2 * k + 1}"},
                      {"speaker": "Bo", "text": "I like hiking too, the hills are great.", "dia_id": f"D{n}:{2 * k + 2}"}]
        conv[f"session_{n}"] = turns
        conv[f"session_{n}_date_time"] = f"1:00 pm on {n} May, 2023"
    p = tmp_path / "locomo.json"
    p.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": []}]))
    return p


def test_locomo_negatives_across_sessions_are_one_speakers_and_capped(tmp_path: Path) -> None:
    p = _locomo(tmp_path)
    old = locomo_pairs(p, _embed, OfflineExtractor(), False, -1.0, 12, max_pairs=1000, max_sessions=3)
    assert old.y and all(_flags(old))  # without cross pairs: sessions one by one, as before
    new = locomo_pairs(p, _embed, OfflineExtractor(), False, -1.0, 12, max_pairs=1000, max_sessions=3,
                       max_cross_pairs=1000)
    cross = [t for t, f in zip(new.text, _flags(new)) if not f]
    assert cross and set(new.y) == {LABELS.index("unrelated")}
    # one speaker's statements only (Bo's reply never pairs with Ann's statement across sessions)
    assert all(("hills are great" in a) == ("hills are great" in b) for a, b in cross)
    capped = locomo_pairs(p, _embed, OfflineExtractor(), False, -1.0, 12, max_pairs=1000, max_sessions=3,
                          max_cross_pairs=2)
    assert sum(not f for f in _flags(capped)) == 2
