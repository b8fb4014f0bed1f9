"""The policy's prompt: request + options + facts with relational states -> chat messages.

Prompts are data (``policy/prompts/<name>.yaml``, each with a ``version``); this module only fills
them. Facts are rendered by ``retrieval.render.render_context`` — the very renderer serving uses — so the
policy sees the same evidence text in training and at inference. A token budget drops whole relation
groups (never half an update), which is how prompts are kept under the configured cap (8192 tokens in
the paper): TRL's GRPOTrainer no longer truncates prompts itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from retrieval.render import render_context, whitespace_tokens
from retrieval.retrieve import EvidenceBundle
from llmclients.chat import ChatMessage
from llmclients.prompt_files import load_prompt_file
from policy.answer_prompts import answer_messages as build_answer_messages
from policy.answer_prompts import load_answer_prompt, options_block
from policy.state import ReasoningState


class PromptTemplate(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    version: str = Field(description="Bumped whenever wording changes; stored with every checkpoint.")
    system: str
    user: str


@cache
def load_prompt(name: str) -> PromptTemplate:
    """``name`` is a file stem in policy/prompts (``policy_v1``) or a path to a YAML file."""
    return load_prompt_file("policy.prompts", name, PromptTemplate)


def facts_block(bundle: EvidenceBundle, budget: int | None = None,
                count_tokens: Callable[[str], int] = whitespace_tokens, repeat_alias: bool = False) -> str:
    """The facts as serving renders them; ``repeat_alias`` closes each line with its alias again.

    Why the repeat: a causal model reads left to right, so the token of "[F3]" at the start of a line
    cannot see that line's relational state; a closing "[F3]" can, and gives a tiny model one place
    to look up everything about F3 when it writes "F3: ...".
    """
    text = render_context(bundle, budget=budget, with_state=True, count_tokens=count_tokens, style="full").text
    if not repeat_alias:
        return text
    return "\n".join(f"{line} {line.split(' ', 1)[0]}" if line.startswith("[F") else line for line in text.splitlines())


def policy_messages(request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None, *,
                    prompt: str = "policy_v1", facts_budget: int | None = None,
                    count_tokens: Callable[[str], int] = whitespace_tokens) -> list[ChatMessage]:
    """System + user messages asking for a Reasoning State over ``bundle``'s facts."""
    t = load_prompt(prompt)
    extra = t.model_extra or {}
    repeat = bool(extra.get("repeat_alias", False))
    show = choices if extra.get("show_options", True) else None
    user = t.user.format(request=request, options=options_block(show),
                         facts=facts_block(bundle, facts_budget, count_tokens, repeat_alias=repeat))
    return [ChatMessage(role="system", content=t.system), ChatMessage(role="user", content=user)]


def as_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """The plain-dict form TRL datasets and chat templates expect."""
    return [m.model_dump() for m in messages]


def answer_messages(request: str, bundle: EvidenceBundle, choices: Sequence[str] | None,
                    state: ReasoningState | None, *, prompt: str = "default") -> list[ChatMessage]:
    """The frozen answer model's input: same evidence, with or without the Reasoning State, built by the
    one answer-message builder serving uses (policy/answer_prompts)."""
    return build_answer_messages(load_answer_prompt(prompt), request, facts_block(bundle), choices,
                                 state.render() if state is not None else None)
