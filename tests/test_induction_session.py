"""Session input: typed loading, malformed input named by file/record/field, benchmark adapters, time expressions."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from induction.adapters import (load_any, load_beam, load_locomo, load_memsyco, normalize_evidence, parse_beam_time,
                                parse_locomo_time)
from induction.session import Session, SessionFormatError, load_sessions
from induction.timex import annotate, find_times


def _write(p: Path, rows: list[object], jsonl: bool = True) -> Path:
    p.write_text("\n".join(json.dumps(r) for r in rows) if jsonl else json.dumps(rows))
    return p


GOOD = {"session_id": "s1", "user_id": "maya", "started_at": "2025-08-10T18:00:00Z",
        "turns": [{"role": "user", "text": "I love hiking."}, {"role": "assistant", "text": "Nice."}]}


def test_load_jsonl_and_json_shapes(tmp_path: Path) -> None:
    s = load_sessions(_write(tmp_path / "a.jsonl", [GOOD, {**GOOD, "session_id": "s2"}]))
    assert [x.session_id for x in s] == ["s1", "s2"]
    assert s[0].turn_id(0) == "s1:0" and s[0].graph_turns()[1].role == "assistant"
    one = tmp_path / "one.json"
    one.write_text(json.dumps(GOOD))
    assert load_sessions(one)[0].user_id == "maya"
    wrapped = tmp_path / "w.json"
    wrapped.write_text(json.dumps({"sessions": [GOOD]}))
    assert load_sessions(wrapped, user_id="leo")[0].user_id == "leo"


@pytest.mark.parametrize("bad, field, record", [
    ({**GOOD, "turns": [{"role": "user"}]}, "turns[0].text", 1),
    ({**GOOD, "turns": []}, "turns", 1),
    ({**GOOD, "turns": [{"role": "user", "text": "   "}]}, "turns[0].text", 1),
    ({**GOOD, "started_at": "yesterday-ish"}, "started_at", 1),
    ({k: v for k, v in GOOD.items() if k != "user_id"}, "user_id", 1),
    ({**GOOD, "turns": [{"role": "user", "text": "a", "turn_id": "x"}, {"role": "user", "text": "b", "turn_id": "x"}]},
     "", 1),
    ({**GOOD, "surprise": 1}, "surprise", 1),
])
def test_malformed_input_names_file_record_and_field(tmp_path: Path, bad: dict, field: str, record: int) -> None:
    f = _write(tmp_path / "bad.jsonl", [{**GOOD, "session_id": "ok"}, bad])
    with pytest.raises(SessionFormatError) as e:
        load_sessions(f)
    assert e.value.record == record and str(f) in str(e.value)
    if field:
        assert e.value.field == field, str(e.value)


def test_not_json_and_duplicate_ids(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(SessionFormatError, match="record 1: line 2 is not JSON"):
        load_sessions(f)
    with pytest.raises(SessionFormatError, match="already used by record 0"):
        load_sessions(_write(tmp_path / "d.jsonl", [GOOD, GOOD]))
    with pytest.raises(SessionFormatError, match="cannot read"):
        load_sessions(tmp_path / "missing.json")


def test_content_hash_is_stable_and_content_sensitive() -> None:
    a = Session.model_validate(GOOD)
    assert a.content_hash() == Session.model_validate({**GOOD, "source": "elsewhere"}).content_hash()
    b = Session.model_validate({**GOOD, "turns": [{"role": "user", "text": "I love hiking!"}]})
    assert a.content_hash() != b.content_hash()


def test_time_expressions_resolve_against_session_date() -> None:
    ref = datetime(2023, 5, 8, 13, 56)  # a Monday
    got = {r.text: r.iso for r in find_times("I went yesterday, and two weeks ago; next month we move, back in 2018", ref)}
    assert got == {"yesterday": "2023-05-07", "two weeks ago": "2023-04-24", "next month": "2023-06", "back in 2018": "2018"}
    assert annotate("I painted it last year", find_times("I painted it last year", ref)) == "I painted it last year (2022)"
    assert find_times("this may be fine", ref) == []  # the modal verb is not the month
    assert [r.iso for r in find_times("on 3 March, 2022 and next week", None)] == ["2022-03-03"]  # no date: absolute only


def test_dataset_time_and_evidence_parsers() -> None:
    assert parse_locomo_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_locomo_time("12:05 am on 1 January, 2022") == datetime(2022, 1, 1, 0, 5)
    assert parse_locomo_time("sometime") is None
    assert parse_beam_time("March-15-2024") == datetime(2024, 3, 15)
    assert normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"]) == ("D8:6", "D9:17", "D11:26", "D30:5")


def test_locomo_adapter_keeps_dia_ids_and_questions(bench_data: Path) -> None:
    convs = load_locomo(bench_data / "locomo" / "locomo10.json")
    c = convs[0]
    assert c.sample_id == "conv-26" and c.user_id == "conv-26" and c.speakers == ("Caroline", "Melanie")
    s1 = c.sessions[0]
    assert s1.started_at == datetime(2023, 5, 8, 13, 56) and s1.turn_id(2) == "D1:3" and s1.turns[2].role == "Caroline"
    assert "[image: a photo of a dog" in s1.turns[4].text
    turn_ids = {s.turn_id(i) for s in c.sessions for i in range(len(s.turns))}
    q = next(q for q in c.questions if q.question.startswith("When did Caroline go to the LGBTQ"))
    assert q.category == 2 and q.evidence_ids == ("D1:3",) and q.answer == "7 May 2023"
    assert all(e in turn_ids for q in c.questions if q.category != 5 for e in q.evidence_ids if e != "D")
    assert sum(len(c.questions) for c in convs) == 1157


def test_memsyco_adapter_separates_answer_key(bench_data: Path) -> None:
    rows = load_memsyco(bench_data / "memsyco-bench" / "valid_memory_selection.jsonl")
    assert len(rows) == 193
    r = rows[0]
    assert r.session.user_id == f"memsyco-{r.id}" and r.session.started_at is None
    assert {i.status for i in r.items} == {"current", "outdated"} and r.policy == "update"
    dumped = r.session.model_dump_json()
    assert r.items[0].content not in dumped and r.question not in dumped  # ingest never sees the key


def test_beam_adapter_message_ids_and_grouped_evidence(bench_data: Path) -> None:
    convs = load_beam(bench_data / "beam" / "100K", conversations=["1"])
    c = convs[0]
    assert c.user_id == "beam-1" and len(c.sessions) == 3 and c.sessions[1].started_at == datetime(2024, 4, 5)
    ids = {s.turn_id(i) for s in c.sessions for i in range(len(s.turns))}
    assert "0" in ids and len(ids) == 188
    ku = next(q for q in c.questions if q.ability == "knowledge_update")
    assert set(ku.evidence_groups) == {"original_info", "updated_info"} and set(ku.evidence_ids) <= ids
    assert next(q for q in c.questions if q.ability == "abstention").evidence_ids == ()


def test_load_any_refuses_to_merge_conversations_into_one_user(bench_data: Path) -> None:
    path = bench_data / "locomo" / "locomo10.json"
    with pytest.raises(SessionFormatError, match="would share user"):
        load_any(path, "locomo", user_id="me")
    s = load_any(path, "locomo", user_id="me", conversation="conv-30")
    assert {x.user_id for x in s} == {"me"} and len(s) == 19
