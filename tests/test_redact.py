"""Secrets never stored (induction/redact.py): pattern tables, and a canary test through the CLI and the
real HTTP server on both backends that finds 0 occurrences in store dumps, raw files, logs and responses."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from servers import free_port, start_api_server

from evomem.cli import main
from induction.redact import RedactConfig, RedactionPattern, iban_ok, luhn_ok, redact_text

FOUND = [  # (text, kind, what must be gone)
    ("my openai key is sk-proj-a1B2c3D4e5F6g7H8i9J0k1L2", "api_key", "sk-proj-a1B2c3D4e5F6g7H8i9J0k1L2"),
    ("anthropic sk-ant-api03-ZZZZyyyyXXXXwwww1234", "api_key", "sk-ant-api03-ZZZZyyyyXXXXwwww1234"),
    ("push with ghp_16C7e42F292c6912E7710c838347Ae178B4a", "api_key", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("aws AKIAIOSFODNN7EXAMPLE in prod", "api_key", "AKIAIOSFODNN7EXAMPLE"),
    ("slack xoxb-123456789012-abcdefABCDEF", "api_key", "xoxb-123456789012-abcdefABCDEF"),
    ("the api key for staging is Zx81kkq9s1", "api_key", "Zx81kkq9s1"),
    ("Authorization: Bearer abc.def-ghi123456", "bearer", "abc.def-ghi123456"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "bearer", "eyJhbGciOiJIUzI1NiJ9"),
    ("my password is hunter2!", "password", "hunter2"),
    ('Password: "c0rrect horse battery"', "password", "c0rrect horse"),
    ("the wifi password at home is Summer2024.", "password", "Summer2024"),
    ("The pin for my bike lock is 4417.", "password", "4417"),
    ("card 4111 1111 1111 1111 exp 12/27", "card", "4111 1111 1111 1111"),
    ("amex 3782-822463-10005", "card", "3782-822463-10005"),
    ("iban DE89 3704 0044 0532 0130 00 please", "iban", "3704 0044 0532"),
    ("pay to GB82WEST12345698765432", "iban", "GB82WEST12345698765432"),
    ("my account number is 12345678", "bank_account", "12345678"),
    ("sort code 12-34-56", "bank_account", "12-34-56"),
]
KEPT = [  # ordinary talk that must survive unchanged
    "I went hiking on 2023-05-08 with 3 friends",
    "I forgot my password again, so annoying",
    "The password is a secret",
    "Her secret is that she loves cats",
    "I opened an account in 2019",
    "call me at 1234 5678 9012 3456",  # 16 digits that fail the Luhn check
    "My token of appreciation was a book",
    "DE89 is not an IBAN on its own",
]


@pytest.mark.parametrize("text,kind,secret", FOUND)
def test_secrets_are_redacted(text: str, kind: str, secret: str) -> None:
    out, counts = redact_text(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out and counts == {kind: 1}, out


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact_text(text) == (text, {})


def test_config_switches_kinds_and_adds_patterns() -> None:
    cfg = RedactConfig(kinds=("card",), extra=(RedactionPattern(kind="employee_id", regex=r"\bEMP-\d{6}\b"),))
    out, counts = redact_text("my password is hunter2, card 4111111111111111, id EMP-123456", cfg)
    assert "hunter2" in out and "4111111111111111" not in out and "EMP-123456" not in out
    assert counts == {"card": 1, "employee_id": 1}
    assert redact_text("my password is hunter2", RedactConfig(enabled=False)) == ("my password is hunter2", {})
    with pytest.raises(ValueError, match="regular expression"):
        RedactionPattern(kind="x", regex="(")
    assert luhn_ok("79927398713") and not luhn_ok("79927398710")
    assert iban_ok("GB82 WEST 1234 5698 7654 32") and not iban_ok("GB82 WEST 1234 5698 7654 33")


def test_every_corpus_shape_is_redacted_and_ordinary_talk_is_kept() -> None:
    """One sentence per rule class (tests/redaction_corpus.py, 3 secrets per shape), split shapes as two
    turns; and the LoCoMo-style talk above stays untouched."""
    from redaction_corpus import SHAPES, corpus, leaks

    from induction.redact import redact_texts

    items = corpus(seed=7)
    assert len(items) >= 100 and len(SHAPES) >= 25
    left = [it.shape for it in items if leaks([it], "\n".join(redact_texts(list(it.turns), ["user"] * 2)[0]))]
    assert left == []
    off = [it for it in items if leaks([it], "\n".join(redact_texts(list(it.turns), None, RedactConfig(enabled=False))[0]))]
    assert len(off) == len(items)  # the check above can fail
    for text in KEPT:
        assert redact_texts([text, text], ["user", "user"])[0] == [text, text]


def test_normalised_matching_keeps_the_text_around_the_secret() -> None:
    key = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"
    text = f"caf\u00e9 \u2014 key {key[:10]}\u200b{key[10:]} ok"
    out, counts = redact_text(text)
    assert out == "caf\u00e9 \u2014 key [REDACTED:api_key] ok" and counts == {"api_key": 1}
    full = "".join(chr(ord(c) + 0xFEE0) for c in "4111111111111111")
    assert redact_text(f"visa {full}") == ("visa [REDACTED:card]", {"card": 1})
    assert redact_text("iban de89 3704 0044 0532 0130 00 please")[0] == "iban [REDACTED:iban] please"
    assert redact_text("card 4111.1111.1111.1111 now")[0] == "card [REDACTED:card] now"


def test_a_secret_split_across_turns_is_caught() -> None:
    from induction.redact import redact_texts

    out, counts = redact_texts(["ok my password is", "hunter2-blue!"], ["user", "user"])
    assert out == ["ok my password is", "[REDACTED:password]"] and counts[1] == {"password": 1}
    out, _ = redact_texts(["my password is", "Got it.", "Zebra42#x"], ["user", "assistant", "user"])
    assert out[2] == "[REDACTED:password]" and out[1] == "Got it."
    out, _ = redact_texts(["the key is sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6", "Mn7Op8Qr9St0Uv1"], ["user", "user"])
    assert "Mn7Op8Qr9St0Uv1" not in out[1] and "Ab1Cd2" not in out[0]
    assert redact_texts(["my password is", "hunter2-blue!"], ["user", "user"], RedactConfig(split_turns=False))[0][1] \
        == "hunter2-blue!"
    assert redact_texts(["I forgot my password", "Whatever, later"], ["user", "user"])[0][1] == "Whatever, later"


def test_every_free_text_field_of_an_edit_batch_is_redacted() -> None:
    from graph.edits import (AttachFact, Conflict, CreateConcept, EditBatch, Resolve, Retract, SplitChild,
                             SplitConcept, Supersede)
    from graph.models import Fact, Turn
    from induction.redact import redact_batch

    pw = "Quartz-8841!x"
    said = f"my password is {pw}"
    fact = Fact(fact_id="u::f1", user_id="u", statement=said, evidence=said, scope=said, holder=said,
                qualifiers={"note": said, said: "v"})
    batch = EditBatch(user_id="u", turns=[Turn(turn_id="t", user_id="u", session_id="s", seq=0, role="user",
                                              text=said)],
                      edits=[CreateConcept(concept_id="u::c", name=said, description=said),
                             SplitConcept(concept_id="u::c", children=(SplitChild(concept_id="u::d", name=said,
                                                                                   description=said, fact_ids=()),)),
                             AttachFact(fact=fact, concept_id="u::c"), Supersede(new_fact_id="a", old_fact_id="b", reason=said),
                             Conflict(a="a", b="b", reason=said), Resolve(a="a", b="b", reason=said),
                             Retract(fact_id="a", reason=said)])
    out, counts = redact_batch(batch)
    assert pw not in out.model_dump_json() and pw in batch.model_dump_json()
    assert counts == {"password": 15}  # turn 1, concepts 4, fact 6 (qualifier key too), reasons 4


def test_an_import_file_is_redacted_before_the_commit() -> None:
    from graph.edits import AttachFact, CreateConcept, EditBatch, Retract, apply_batch
    from graph.models import Fact, Turn
    from graph.portable import UserExport, dumps, loads
    from graph.snapshot import Snapshot
    from induction.redact import redact_export

    pw = "Walnut-5512#q"
    said = f"the wifi password, by the way, is {pw}"
    batch = EditBatch(user_id="u", turns=[Turn(turn_id="t", user_id="u", session_id="s", seq=0, role="user", text=said)],
                      edits=[CreateConcept(concept_id="u::c", name=said, description=said),
                             AttachFact(fact=Fact(fact_id="u::f", user_id="u", statement=said, evidence=said,
                                                  source_turn_ids=("t",)), concept_id="u::c"),
                             Retract(fact_id="u::f", reason=said)])
    snap, _ = apply_batch(Snapshot(user_id="u"), batch)
    data = loads(dumps(UserExport(snap, list(batch.turns), {"u::f": [0.5, 0.5]})))
    out, counts = redact_export(data)
    assert pw in dumps(data) and pw not in dumps(out) and "[REDACTED:password]" in dumps(out)
    assert sum(counts.values()) >= 5 and out.embeddings == {}  # re-embedded from the redacted statement


# -- the canary test --------------------------------------------------------------------------------------
CANARIES = {
    "api_key": "sk-proj-CANARYq7W2e9R4t6Y1u3I5o8P0",
    "github": "ghp_CANARY7a8b9c0d1e2f3g4h5i6j7k8l9m0n",
    "aws": "AKIACANARY0000000001",
    "password": "Canary-Pa55word-771",
    "bearer": "CANARYbearerTok3n9876543210",
    "card": "4111111111111111",
    "iban": "GB82WEST12345698765432",
    "account": "88776655443",
}
SECRET_TURNS = [
    f"I love hiking in the Alps. My openai key is {CANARIES['api_key']} so keep it handy.",
    f"I prefer green tea in the morning. My deploy token is {CANARIES['github']} and AWS is {CANARIES['aws']}.",
    f"My password is {CANARIES['password']} for the bank site, and I am allergic to peanuts.",
    f"Use Authorization: Bearer {CANARIES['bearer']} for the API. I work as a nurse.",
    f"My card is {' '.join(CANARIES['card'][i:i + 4] for i in range(0, 16, 4))} and my IBAN is GB82 WEST 1234 5698 7654 32.",
    f"I moved to Lisbon last year. My account number is {CANARIES['account']}.",
]
# the card and IBAN are said with spaces; the forms without spaces are checked too
NEEDLES = [*CANARIES.values(), "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32", "Canary-Pa55word"]


def sessions(user: str) -> list[dict[str, Any]]:
    said = [" ".join(SECRET_TURNS[:3]), " ".join(SECRET_TURNS[3:])]
    return [{"session_id": f"{user}-s{i}", "user_id": user, "started_at": f"2025-0{i + 1}-10T10:00:00Z",
             "turns": [{"role": "user", "text": text}, {"role": "assistant", "text": "Noted."}]}
            for i, text in enumerate(said)]


def leaks(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        return [n for n in NEEDLES if n.encode() in text]
    return [n for n in NEEDLES if n in text]


def raw_bytes(store: Path) -> bytes:
    """Every byte of an embedded store: its file and the files beside it named after it (WAL, locks)."""
    files = [p for p in sorted(store.parent.iterdir()) if p.name.startswith(store.name) and p.is_file()]
    files += [p for p in sorted(store.rglob("*")) if p.is_file()] if store.is_dir() else []
    assert files, store
    return b"".join(p.read_bytes() for p in files)


def test_raw_file_scan_would_find_an_unredacted_secret(tmp_path: Path) -> None:
    """Control: with redaction off the same scan finds the canaries, so 0 below means something."""
    from graph.embedded import EmbeddedStore
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from induction.session import parse_session
    from llmclients.embeddings import HashEmbedder
    from memcore.memory import Memory

    mem = Memory(EmbeddedStore(tmp_path / "plain"), HashEmbedder(64))
    mem.store.setup()
    ing = make_ingestor(mem, IngestConfig(redact=RedactConfig(enabled=False)))
    for s in sessions("ctl"):
        ing.ingest(parse_session(s, source="test"))
    mem.close()
    said = set(NEEDLES) - {CANARIES["card"], CANARIES["iban"]}  # these two were said with spaces
    assert said <= set(leaks(raw_bytes(tmp_path / "plain")))


def test_a_session_stored_before_redaction_is_still_unchanged(embedded_memory: Any) -> None:
    """Re-ingesting a session that was stored unredacted (before this feature) is a no-op, not a conflict."""
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from induction.session import parse_session

    s = parse_session(sessions("old")[0], source="test")
    assert make_ingestor(embedded_memory, IngestConfig(redact=RedactConfig(enabled=False))).ingest(s).status == "committed"
    again = make_ingestor(embedded_memory).ingest(s)
    assert again.status == "unchanged" and sum(again.redacted.values()) >= 3


def _dump_store(store: Any, users: list[str]) -> str:
    from graph.portable import export_user

    out = [export_user(store, u) for u in users]
    for u in users:  # what the read-only Cypher surface returns too
        out.append(json.dumps(store.run_readonly_cypher(u, "MATCH (n) RETURN n"), default=str))
    return "\n".join(out)


@pytest.mark.parametrize("backend", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_canaries_reach_no_store_log_or_response(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []  # every response and every line of output, checked at the end
    if backend == "neo4j":
        neo = request.getfixturevalue("_neo4j_store")
        neo.wipe()
        uri = request.getfixturevalue("neo4j_uri")
        cli_store = ["--store", "neo4j", "--neo4j-uri", uri]
        http_store = ["--store", "neo4j", "--neo4j-uri", uri]
    else:
        cli_store = ["--store-path", str(tmp_path / "cli-store")]
        http_store = []  # start_api_server's own embedded store
    # 1. CLI
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(s) for s in sessions("cathy")))
    caplog.set_level(logging.DEBUG)
    for args in (["ingest", str(f), "--json"], ["ingest", str(f)],
                 ["retrieve", "--user", "cathy", "what is my openai key and password"],
                 ["facts", "--user", "cathy", "--include", "all", "--json"], ["profile", "--user", "cathy", "--json"],
                 ["export", "--user", "cathy", "--out", "-"]):
        rc = main([*args, *cli_store, "--embedder", "hash"])
        out = capsys.readouterr()
        seen += [out.out, out.err]
        assert rc == 0, out.err
    report = json.loads(seen[0])
    assert report["committed"] == 2 and sum(report["redacted"].values()) >= 8, report
    assert "secrets redacted before storage" in seen[2]
    assert "[REDACTED:api_key]" in seen[-2]  # the export holds the placeholder, the memory itself survives
    seen += [r.getMessage() for r in caplog.records]
    # 2. HTTP, a real `evomem serve` on 127.0.0.1 with debug logging
    # an answer URL where nothing listens: no answer model loads (no route used here generates an answer)
    api = start_api_server(tmp_path, tmp_path / "http-store", f"http://127.0.0.1:{free_port()}/v1", "none",
                           api_key="canary-key-0123456789",
                           extra_args=[*http_store, "--log-level", "debug"])
    try:
        with httpx.Client(base_url=api.url, headers=api.headers, timeout=60) as c:
            rs = [c.post("/v1/users/hugo/sessions", json=s) for s in sessions("hugo")]
            assert all(r.status_code == 200 for r in rs), [r.text for r in rs]
            assert sum(sum(r.json()["redacted"].values()) for r in rs) >= 8
            edits = {"user_id": "hugo", "session_id": "e1", "turns": [
                {"turn_id": "e1:0", "user_id": "hugo", "session_id": "e1", "seq": 0, "role": "user",
                 "text": f"remember my password is {CANARIES['password']}"}], "edits": []}
            rs.append(c.post("/v1/users/hugo/edits", json=edits))
            assert rs[-1].status_code == 200 and rs[-1].json()["redacted"] == {"password": 1}, rs[-1].text
            rs += [c.post("/v1/users/hugo/search", json={"query": "openai key password card"}),
                   c.post("/v1/users/hugo/state", json={"query": "what is my password"}),
                   c.get("/v1/users/hugo/facts", params={"include": "all"}), c.get("/v1/users/hugo/profile"),
                   c.post("/v1/users/hugo/cypher", json={"query": "MATCH (t:Turn) RETURN t.text AS text"})]
            assert all(r.status_code == 200 for r in rs), [r.text for r in rs if r.status_code != 200]
            assert any("[REDACTED:" in r.text for r in rs[-1:])
            seen += [r.text for r in rs]
    finally:
        api.stop()
    seen.append(api.log())
    # 3. the stores themselves: export + Cypher dump on both backends, raw files of the embedded ones
    if backend == "neo4j":
        with neo._driver.session() as s:  # noqa: SLF001 - every property of every node and relationship
            dump = json.dumps([r.data() for r in s.run("MATCH (n) OPTIONAL MATCH (n)-[r]->() "
                                                        "RETURN properties(n) AS n, properties(r) AS r")], default=str)
        assert "cathy" in dump and "hugo" in dump
        seen += [dump, _dump_store(neo, ["cathy", "hugo"])]
    else:
        from graph.embedded import EmbeddedStore

        for path, user in ((tmp_path / "cli-store", "cathy"), (tmp_path / "http-store", "hugo")):
            st = EmbeddedStore(path)
            try:
                seen.append(_dump_store(st, [user]))
            finally:
                st.close()
            raw = raw_bytes(path)
            assert b"REDACTED" in raw and not leaks(raw), leaks(raw)
    found = sorted({n for text in seen for n in leaks(text)})
    assert found == [], found
