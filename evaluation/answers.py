"""Answer metrics, optional: an answer model writes answers, an LLM judge grades them.

The judge prompt is data (``prompts/judge_<version>.yaml``, with its version reported in every
result). The judge proposes a verdict as JSON; ``parse_verdict`` disposes: anything that is not
``{"correct": bool, "reason": str}`` is an unjudged answer (counted, left out of accuracy), never a
guess. Our system's answers go through ``serving.pipeline.AnswerPipeline`` (the same stages and
ablation switches production uses); the turn baselines' answers use the same answer prompt with
the baseline's turns as the context.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmclients.chat import ChatError, ChatMessage, ChatModel


class JudgePrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str = Field(min_length=1, description="Bumped on any wording change; reported with the results.")
    system: str = Field(description="System message: the grading instructions.")
    user: str = Field(description="User message with {question}, {reference} and {answer}.")
    max_tokens: int = Field(default=96, ge=8, description="Completion cap for one verdict.")

    def messages(self, question: str, reference: str, answer: str) -> list[ChatMessage]:
        # Plain replacement, not str.format: answers may contain braces.
        user = self.user.replace("{question}", question).replace("{reference}", reference).replace("{answer}", answer)
        return [ChatMessage(role="system", content=self.system), ChatMessage(role="user", content=user)]


@cache
def load_judge_prompt(name: str = "judge_v1") -> JudgePrompt:
    """A shipped prompt name (``judge_v1``) or a path to a YAML file of the same shape."""
    if name.endswith((".yaml", ".yml")):
        text = Path(name).read_text(encoding="utf-8")
    else:
        res = resources.files("evaluation.prompts").joinpath(f"{name}.yaml")
        if not res.is_file():
            raise ValueError(f"no judge prompt {name!r} in evaluation/prompts")
        text = res.read_text(encoding="utf-8")
    prompt = JudgePrompt.model_validate(yaml.safe_load(text))
    for ph in ("{question}", "{reference}", "{answer}"):
        if ph not in prompt.user:
            raise ValueError(f"judge prompt {name!r}: user message lacks {ph}")
    return prompt


class Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")
    correct: bool
    reason: str = ""


def parse_verdict(text: str) -> Verdict | None:
    """The judge's reply -> Verdict, or None when it is not the JSON the prompt asks for.

    >>> parse_verdict('```json\\n{"correct": true, "reason": "same date"}\\n```').correct
    True
    >>> parse_verdict("I think it is right") is None
    True
    """
    from llmclients.openai_client import extract_json

    try:
        data: Any = extract_json(text)
        return Verdict.model_validate(data)
    except (ValueError, ValidationError, TypeError):
        return None


class Judge:
    def __init__(self, chat: ChatModel, prompt: str = "judge_v1"):
        self.chat, self.prompt = chat, load_judge_prompt(prompt)
        self.errors = 0

    @property
    def version(self) -> str:
        return self.prompt.version

    def grade(self, question: str, reference: str, answer: str) -> Verdict | None:
        schema = Verdict.model_json_schema()
        try:
            res = self.chat.complete(self.prompt.messages(question, reference, answer), max_tokens=self.prompt.max_tokens,
                                     temperature=0.0, json_schema=schema)
        except ChatError:
            self.errors += 1
            return None
        verdict = parse_verdict(res.text)
        if verdict is None:
            self.errors += 1
        return verdict


def baseline_messages(prompt_name: str, request: str, context: str) -> list[ChatMessage]:
    """The answer prompt ``prompt_name`` (serving/prompts) filled with a turn baseline's context."""
    from serving.prompts import fill, load_answer_prompt

    p = load_answer_prompt(prompt_name)
    user = fill(p.user, request=request, options="", context=context or p.no_memories, state_block="",
                instruction=p.open_instruction)
    return [ChatMessage(role="system", content=p.system), ChatMessage(role="user", content=user)]


def answer_from_turns(chat: ChatModel, prompt_name: str, request: str, context: str, temperature: float = 0.0) -> str:
    from serving.prompts import load_answer_prompt

    res = chat.complete(baseline_messages(prompt_name, request, context), max_tokens=load_answer_prompt(prompt_name).max_tokens,
                        temperature=temperature)
    return res.text.strip()
