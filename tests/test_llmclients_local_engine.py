"""The in-process transformers engine: tiny offline model (fast), SmolLM2 from the shipped GGUF (slow:
first conversion into an empty cache, then the cached load), and the JSON-schema helpers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from servers import shared_tiny_model

from llmclients.chat import ChatMessage
from llmclients.local_engine import (
    ContextTooLong,
    LocalChatEngine,
    ensure_converted,
    schema_errors,
    schema_skeleton,
    smollm2_gguf,
)

MSG = [ChatMessage(role="user", content="What is the capital of France?")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LocalChatEngine:
    return LocalChatEngine(shared_tiny_model(tmp_path_factory.getbasetemp()), name="tiny")


def test_tiny_engine_completes_with_usage_and_logprobs(tiny: LocalChatEngine) -> None:
    res = tiny.complete(MSG, max_tokens=5, logprobs=True)
    assert res.model == "tiny" and 1 <= res.usage.completion_tokens <= 5 and res.usage.prompt_tokens > 5
    assert res.logprobs is not None and len(res.logprobs) == res.usage.completion_tokens
    greedy_again = tiny.complete(MSG, max_tokens=5)
    assert greedy_again.text == res.text  # temperature 0 is deterministic


def test_tiny_engine_refuses_prompts_beyond_its_context(tiny: LocalChatEngine) -> None:
    with pytest.raises(ContextTooLong):
        tiny.complete([ChatMessage(role="user", content="word " * 5000)], max_tokens=10)


def test_engine_needs_a_model_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        LocalChatEngine(tmp_path)


def test_schema_errors_cover_pydantic_output() -> None:
    from pydantic import BaseModel, Field

    class Item(BaseModel):
        name: str = Field(min_length=1)
        n: int = Field(ge=0)

    class Out(BaseModel):
        items: list[Item]
        mode: str | None = None

    schema = Out.model_json_schema()
    assert schema_errors({"items": [{"name": "a", "n": 1}]}, schema) == []
    errs = schema_errors({"items": [{"name": "", "n": -1}, {"n": "x"}]}, schema)
    assert any("shorter" in e for e in errs) and any("below" in e for e in errs)
    assert any("missing required property 'name'" in e for e in errs) and any("expected integer" in e for e in errs)
    assert schema_errors({"items": [], "mode": 3}, schema) == ["$.mode: matches none of anyOf"]


def test_schema_skeleton_is_a_valid_shape() -> None:
    schema = {"type": "object", "properties": {"verdict": {"enum": ["new", "duplicate"]}, "score": {"type": "number"},
                                               "ids": {"type": "array", "items": {"type": "string"}}}}
    assert schema_skeleton(schema) == {"verdict": "new|duplicate", "score": 0.0, "ids": ["..."]}


@pytest.mark.slow
def test_smollm2_gguf_converts_once_then_loads_fast_and_answers(tmp_path: Path) -> None:
    gguf = smollm2_gguf()
    t0 = time.perf_counter()
    folder, converted = ensure_converted(gguf, tmp_path)
    convert_s = time.perf_counter() - t0
    assert converted and (folder / "model.safetensors").is_file()
    assert json.loads((folder / "evomem-source.json").read_text())["size"] == gguf.stat().st_size
    t1 = time.perf_counter()
    again, converted_again = ensure_converted(gguf, tmp_path)
    assert again == folder and not converted_again and time.perf_counter() - t1 < 5  # fingerprint only
    engine = LocalChatEngine(folder, name="smollm2")
    print(f"\nSmolLM2 GGUF conversion {convert_s:.1f}s, cached load {engine.load_seconds:.2f}s")
    assert engine.load_seconds < convert_s
    tok = engine.tokenizer
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|im_end|>"
    res = engine.complete(MSG, max_tokens=24)
    assert "Paris" in res.text and res.finish_reason == "stop"  # stopped at <|im_end|>, not at max_tokens
    stopped = engine.complete([ChatMessage(role="user", content="Count from 1 to 20, comma separated.")],
                              max_tokens=60, stop=["7"])
    assert "7" not in stopped.text and "6" in stopped.text and stopped.finish_reason == "stop"
    js = engine.complete([ChatMessage(role="user", content="Name the capital of France and its country.")],
                         max_tokens=40, json_schema={"type": "object", "properties": {"city": {"type": "string"},
                                                                                      "country": {"type": "string"}},
                                                     "required": ["city", "country"]})
    value = json.loads(js.text)
    assert set(value) == {"city", "country"} and "Paris" in value["city"]
