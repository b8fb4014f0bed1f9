"""Answer prompts as data: ``answer_<name>.yaml`` beside this file, each with a ``version``.

One source for the answer model's input, at training and at serving: the GRPO reward's frozen answer
model (policy/rewards.py) and the serving pipeline (serving/pipeline.py) both build their messages with
``answer_messages`` from the same prompt file, so the policy is trained on what it is served with.

Filling is plain placeholder replacement (not ``str.format``), so prompts and memories may contain
braces — JSON examples, code — without breaking the template.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmclients.chat import ChatMessage
from llmclients.prompt_files import known_prompt_files, load_prompt_file

PLACEHOLDERS = ("request", "options", "context", "state_block", "instruction", "reasoning_state")


class AnswerPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(description="Short name: default, locomo, memsyco, ...")
    version: str = Field(min_length=1, description="Bumped whenever the wording changes; reported with every answer.")
    system: str = Field(description="System message.")
    user: str = Field(description="User message: {request} {options} {context} {state_block} {instruction}.")
    state_block: str = Field(description="Inserted as {state_block} when a Reasoning State exists: {reasoning_state}.")
    no_memories: str = Field(description="Shown as {context} when nothing was retrieved.")
    open_instruction: str = Field(description="{instruction} for open requests.")
    options_instruction: str = Field(description="{instruction} when answer options are given.")
    inject: str = Field(description="System message for /v1/chat/completions memory injection: {context} {state_block}.")
    max_tokens: int = Field(default=256, ge=1, description="Default answer length cap for this benchmark.")

    @model_validator(mode="after")
    def _placeholders(self) -> AnswerPrompt:
        for field, needed in (("user", ("{request}", "{context}", "{state_block}")),
                              ("state_block", ("{reasoning_state}",)), ("inject", ("{context}", "{state_block}"))):
            missing = [p for p in needed if p not in getattr(self, field)]
            if missing:
                raise ValueError(f"prompt {self.name!r}: field {field} lacks {', '.join(missing)}")
        return self


def fill(template: str, **values: str) -> str:
    """Replace ``{name}`` for the known placeholders only; other braces are left alone.

    >>> fill('{"a": 1} {request}', request="hi")
    '{"a": 1} hi'
    """
    for k, v in values.items():
        if k not in PLACEHOLDERS:
            raise KeyError(f"unknown placeholder {k!r}")
        template = template.replace("{" + k + "}", v)
    return template


def known_prompts() -> list[str]:
    return known_prompt_files("policy.answer_prompts", "answer_")


@cache
def load_answer_prompt(name: str) -> AnswerPrompt:
    """``name`` is a shipped prompt (``default``, ``locomo``, ``memsyco``) or a path to a YAML file."""
    return load_prompt_file("policy.answer_prompts", name, AnswerPrompt, prefix="answer_")


def options_block(choices: Sequence[str] | None) -> str:
    """Options as lettered lines, or nothing.

    >>> options_block(["beach", "hiking"])
    'Options:\\n(A) beach\\n(B) hiking\\n'
    """
    if not choices:
        return ""
    return "Options:\n" + "".join(f"({chr(65 + i)}) {c}\n" for i, c in enumerate(choices))


def state_block(prompt: AnswerPrompt, reasoning_state: str | None) -> str:
    """The prompt's Reasoning-State block, or nothing when there is no state."""
    return fill(prompt.state_block, reasoning_state=reasoning_state) if reasoning_state else ""


def answer_messages(prompt: AnswerPrompt, request: str, context: str, choices: Sequence[str] | None = None,
                    reasoning_state: str | None = None) -> list[ChatMessage]:
    """System + user messages for the answer model: the request, the rendered memories and, when there
    is one, the Reasoning State."""
    user = fill(prompt.user, request=request, options=options_block(choices), context=context or prompt.no_memories,
                state_block=state_block(prompt, reasoning_state), instruction=prompt.options_instruction if choices else prompt.open_instruction)
    return [ChatMessage(role="system", content=prompt.system), ChatMessage(role="user", content=user)]
