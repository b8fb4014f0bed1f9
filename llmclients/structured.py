"""The one structured-output path for model replies: find the JSON, detect a refusal, validate against a
pydantic model. Extraction, adjudication, the judge and the local engine's JSON retries all use it, so
a reply is read the same way everywhere; failures carry a ``kind`` callers map to their own errors.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from llmclients.chat import ChatError, ChatMessage, ChatModel, ChatResult

T = TypeVar("T", bound=BaseModel)
ReplyErrorKind = Literal["refusal", "malformed_json", "schema"]

_REFUSAL = re.compile(r"^\s*(i'?m sorry|sorry|i can(?:no|')t|i am unable|i won'?t|as an ai)\b", re.I)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


class ReplyError(ValueError):
    """The reply is not the structured answer asked for; ``kind`` says why."""

    def __init__(self, message: str, kind: ReplyErrorKind):
        super().__init__(message)
        self.kind: ReplyErrorKind = kind


def extract_json(text: str) -> Any:
    """The first complete JSON value in ``text`` (models like to wrap JSON in prose or ``` fences).

    >>> extract_json('Sure: ```json\\n{"a": 1}\\n```')
    {'a': 1}
    """
    dec = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return dec.raw_decode(text[i:])[0]
            except ValueError:
                continue
    raise ValueError("no JSON object in the model output")


def is_refusal(text: str, finish_reason: str | None = None) -> bool:
    """A content filter stopped it, or it opens like an apology and carries no JSON early on.

    >>> is_refusal("I'm sorry, I can't help with that."), is_refusal('{"facts": []}')
    (True, False)
    """
    return finish_reason == "content_filter" or bool(_REFUSAL.search(text) and "{" not in text[:200])


def parse_reply(text: str, model: type[T], finish_reason: str | None = None, *, strict: bool = False) -> T:
    """``text`` as a ``model``, or ``ReplyError``.

    strict: the whole reply must be one JSON value (a ```json fence around it is tolerated) — for
    extraction, where prose around the JSON means the model did not follow the format. Otherwise the
    first JSON value anywhere in the reply is taken (judges and small models wrap it in prose).
    """
    if is_refusal(text, finish_reason):
        raise ReplyError(f"model refused: {text[:120]!r}", "refusal")
    try:
        if strict:
            body = text.strip()
            fence = _FENCE.match(body)
            data = json.loads(fence.group(1) if fence else body)
        else:
            data = extract_json(text)
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        hint = " (output cut at max_tokens)" if finish_reason == "length" else ""
        where = f": {e.msg} at char {e.pos}" if isinstance(e, json.JSONDecodeError) else ""
        raise ReplyError(f"reply is not JSON{hint}{where}: {text.strip()[:120]!r}", "malformed_json") from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ReplyError(f"reply breaks the schema at {loc or '<root>'}: {err['msg']}", "schema") from None


def complete_json(chat: ChatModel, messages: list[ChatMessage], response_model: type[T], *,
                  max_tokens: int = 512, temperature: float = 0.0) -> tuple[T, ChatResult]:
    """Ask any ``ChatModel`` for JSON matching ``response_model``; validate it in code.

    The model proposes, code disposes: a reply that is not valid JSON for the schema raises
    ``ChatError(kind="invalid_response")`` naming the problem, so callers never get a half-filled object.
    """
    res = chat.complete(messages, max_tokens=max_tokens, temperature=temperature,
                        json_schema=response_model.model_json_schema())
    try:
        return parse_reply(res.text, response_model, res.finish_reason), res
    except ReplyError as e:
        raise ChatError(f"{chat.name} did not return a valid {response_model.__name__}: {str(e)[:300]}",
                        "invalid_response") from e
