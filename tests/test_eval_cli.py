"""``evomem eval`` end to end (hash embedder, temporary embedded store), errors, and the optional answer path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evomem.cli import build_parser, main
from evaluation.harness import AnswerSetup, Harness, HarnessConfig
from evaluation.locomo import locomo_episodes, reference, score_answer
from evaluation.report import build_report
from memcore.memory import Memory
from induction.pipeline import make_ingestor
from llmclients.chat import ChatMessage, ChatResult
from policy.rule import RulePolicy
from scoring.judge import Judge, load_judge_prompt, parse_verdict
from serving.pipeline import AnswerPipeline, PipelineConfig
from test_eval_benchmarks import write_beam, write_memsyco
from test_eval_harness import locomo_slice, write_slice


def test_one_eval_command_with_positional_benchmark() -> None:
    p = build_parser()
    ns = p.parse_args(["eval", "beam", "--data", "x", "--k", "5", "--no-ablations"])
    assert ns.benchmark == "beam" and ns.k == 5 and ns.ablations is False
    with pytest.raises(SystemExit):
        p.parse_args(["eval", "longmemeval", "--data", "x"])


def test_eval_locomo_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_slice(tmp_path / "data").parent
    out = tmp_path / "out"
    rc = main(["eval", "locomo", "--data", str(data), "--embedder", "hash", "--k", "3", "--budget", "120", "--json",
               "--out", str(out), "--bootstrap", "50", "--no-progress"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)  # exactly one JSON object on stdout
    for key in ("hit_rate", "coverage", "complete_retrieval_rate", "context_tokens_mean", "retrieval_p50_ms", "n_questions",
                "baselines", "by_category", "ablations", "unresolved_evidence", "ingest_ms_per_session"):
        assert key in rep, key
    for b in rep["baselines"].values():
        assert {"hit_rate", "coverage", "complete_retrieval_rate", "context_tokens_mean", "retrieval_p50_ms",
                "n_questions"} <= set(b)
    assert rep["n_questions"] == 7 and rep["meta"]["store"] == "embedded" and rep["meta"]["extractor"] == "offline"
    assert rep["context_tokens_mean"] <= 120
    assert (out / "report.md").is_file() and (out / "by_category.png").is_file()
    assert len((out / "questions.jsonl").read_text().splitlines()) == len(locomo_slice()[0]["qa"])


def test_eval_beam_and_memsyco_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beam = write_beam(tmp_path / "beam")
    assert main(["eval", "beam", "--data", str(beam), "--embedder", "hash", "--bootstrap", "0", "--no-progress"]) == 0
    assert "| **evomem** |" in capsys.readouterr().out
    ms = write_memsyco(tmp_path / "ms")
    assert main(["eval", "memsyco", "--data", str(ms), "--embedder", "hash", "--json", "--no-progress"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert {"current_hit", "outdated_leak", "order", "n_rows", "baselines", "tasks"} <= set(rep)


def test_eval_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = locomo_slice()
    bad[0]["conversation"]["session_1"][2]["speaker"] = 7
    p = write_slice(tmp_path / "bad", bad)
    assert main(["eval", "locomo", "--data", str(p), "--embedder", "hash", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "record 0" in err and "session_1[2].speaker" in err
    assert main(["eval", "beam", "--data", str(tmp_path / "nope"), "--embedder", "hash", "--no-progress"]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["eval", "locomo", "--data", str(p), "--answers", "openai", "--embedder", "hash"]) == 2
    assert "--answer-url" in capsys.readouterr().err


class Scripted:
    """A ChatModel for logic tests: answers with a fixed text; as a judge, says correct iff the answer has the word."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[list[ChatMessage]] = []

    def complete(self, messages: list[ChatMessage], **kw: Any) -> ChatResult:
        self.calls.append(messages)
        if "grade an answer" in messages[0].content:
            ok = "adoption" in messages[1].content.split("Answer to grade:")[1].lower()
            return ChatResult(text=json.dumps({"correct": ok, "reason": "scripted"}))
        return ChatResult(text=self.reply)


def test_answer_metrics_and_acc_at_complete(tmp_path: Path, embedder: Any) -> None:
    from graph.embedded import EmbeddedStore

    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    mem = Memory(store, embedder)
    chat = Scripted("Adoption agencies")
    pipe = AnswerPipeline(mem, RulePolicy(), chat, PipelineConfig(k=3, context_budget=100))
    setup = AnswerSetup(pipe, chat, Judge(chat), score_answer, reference)
    cfg = HarnessConfig(k=3, budget=100, baselines=("naive_rag", "full_context"), answer_prompt="locomo")
    run = Harness(make_ingestor(mem), cfg, policy=RulePolicy(), answers=setup).run(locomo_episodes(write_slice(tmp_path / "d")))
    mem.close()
    q = next(r for r in run.questions if r.qid == "conv-26#8")  # "What did Caroline research?" -> "Adoption agencies"
    for name in ("evomem", "no_traversal", "no_relational_states", "no_reasoning_state", "naive_rag", "full_context"):
        assert q.outcomes[name].answer == "Adoption agencies" and q.outcomes[name].f1 == 1.0 and q.outcomes[name].judge is True
    assert "bm25" not in q.outcomes or q.outcomes["bm25"].answer is None
    # the same fixed answer is wrong elsewhere: F1 0 for "7 May 2023"
    assert next(r for r in run.questions if r.qid == "conv-26#7").outcomes["evomem"].f1 == 0.0
    rep = build_report(run, "locomo", {}, n_boot=0)
    a = rep["answers"]
    scored = [r for r in run.questions if r.scored]
    complete = [r for r in scored if r.outcomes["evomem"].n_hit == r.n_gold]
    # Acc@complete by hand: judged-correct share among the complete questions
    assert a["acc_at_complete"] == (round(sum(bool(r.outcomes["evomem"].judge) for r in complete) / len(complete), 4)
                                    if complete else None)
    # answers are scored over every category 1-4 question, with or without resolvable evidence
    assert a["n_answered"] == len([r for r in run.questions if r.top_level]) == 9
    # the judge control: the scripted judge accepts a wrong reference only when it says "adoption"
    jc = rep["judge_check"]
    assert jc["n"] >= 2 and jc["unparsed"] == 0 and 0.0 <= jc["false_accept_rate"] < 0.5
    # answer prompts for the state-aware system carry a Reasoning State; the ablation's do not
    sent = [m[1].content for m in chat.calls if m[0].content.startswith("You answer questions")]
    assert any("Reasoning State:" in s for s in sent) and any("Reasoning State:" not in s for s in sent)


def test_judge_prompt_is_data() -> None:
    p = load_judge_prompt()
    assert p.version == "judge-v1" and "{answer}" in p.user
    msgs = p.messages("Q {x}?", "R", "A")
    assert "Q {x}?" in msgs[1].content and "Reference answer: R" in msgs[1].content
    assert parse_verdict('{"correct": false}').correct is False  # type: ignore[union-attr]
    assert parse_verdict('{"correct": "maybe"}') is None
    with pytest.raises(ValueError):
        load_judge_prompt("judge_v0")
