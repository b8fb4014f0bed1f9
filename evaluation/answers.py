"""Answers for the answer metrics: our system's go through ``serving.pipeline.AnswerPipeline`` (the same
stages and ablation switches production uses); the turn baselines' answers use the same answer prompt
with the baseline's turns as the context. The LLM judge that grades them is scoring/judge.py.
"""

from __future__ import annotations

from llmclients.chat import ChatMessage, ChatModel


def baseline_messages(prompt_name: str, request: str, context: str) -> list[ChatMessage]:
    """The answer prompt ``prompt_name`` (policy/answer_prompts) filled with a turn baseline's context."""
    from policy.answer_prompts import fill, load_answer_prompt

    p = load_answer_prompt(prompt_name)
    user = fill(p.user, request=request, options="", context=context or p.no_memories, state_block="",
                instruction=p.open_instruction)
    return [ChatMessage(role="system", content=p.system), ChatMessage(role="user", content=user)]


def answer_from_turns(chat: ChatModel, prompt_name: str, request: str, context: str, temperature: float = 0.0) -> str:
    from policy.answer_prompts import load_answer_prompt

    res = chat.complete(baseline_messages(prompt_name, request, context), max_tokens=load_answer_prompt(prompt_name).max_tokens,
                        temperature=temperature)
    return res.text.strip()
