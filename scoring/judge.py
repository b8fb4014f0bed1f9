"""The one LLM judge, with its one prompt (``prompts/judge_<version>.yaml``, the version reported with
every result): benchmarks' answer accuracy and the policy rewards' judge-scored rows both use it.

The judge proposes a verdict as JSON; ``parse_verdict`` disposes (through llmclients/structured.py):
anything that is not ``{"correct": bool, "reason": str}`` is an unjudged answer (None: counted, left
out of accuracy or dropped from a reward), never a guess.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llmclients.chat import ChatError, ChatMessage, ChatModel
from llmclients.prompt_files import load_prompt_file
from llmclients.structured import ReplyError, parse_reply


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
    prompt = load_prompt_file("scoring.prompts", name, JudgePrompt)
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
    try:
        return parse_reply(text, Verdict)
    except ReplyError:
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
