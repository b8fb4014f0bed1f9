"""A Reasoning State assembled from one policy call per retrieved fact (prompts with ``unit: fact``).

Why: a whole-state policy on SmolLM2-135M writes request-type layouts ("F1: ignore, the rest use")
whatever the facts say (docs/design-notes.md, notes 36-38): with every fact in one prompt, position is
the cheapest cue. Here each call sees the request, its options, one fact's line and the facts it is directly
linked to (what it replaces, what replaced it, what it conflicts with), and answers that fact's line without its
handle (``historical | ignore | low``). Code prefixes the handle and joins the lines; ``parse_state``
then checks the whole state as it checks any other, so a bad line fails the state (and serving falls
back to the rule baseline) instead of being patched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval.render import fact_line, holder_mark
from retrieval.retrieve import EvidenceBundle
from llmclients.chat import ChatMessage
from policy.answer_prompts import options_block
from policy.prompt import load_prompt
from policy.state import ReasoningState, parse_state

MAX_RELATED = 3  # directly linked facts shown with a fact; a long supersession chain would swamp the prompt
_HANDLE = re.compile(r"^\s*\[?F\d+\]?\s*:\s*")


def is_per_fact(prompt: str) -> bool:
    """True when the prompt file asks for one line per fact (``unit: fact``)."""
    return (load_prompt(prompt).model_extra or {}).get("unit") == "fact"


def holder_heading(holder: str) -> str:
    """Whose memory a fact is, as a per-fact prompt's heading says it (the ``{whose}`` of policy_fact_v2):
    outside evidence is named as such before the statement, so a report and the belief it contradicts
    differ in their first words.

    >>> holder_heading("user"), holder_heading("assistant"), holder_heading("document"), holder_heading("Anna")
    ("the user's own", 'outside evidence, said by the assistant', 'outside evidence, from a document', 'about Anna')
    """
    if holder in ("", "user"):
        return "the user's own"
    mark = holder_mark(holder)
    return mark if mark.startswith("about ") else f"outside evidence, {mark}"


def fact_messages(request: str, bundle: EvidenceBundle, alias: str, choices: Sequence[str] | None = None, *,
                  prompt: str = "policy_fact_v1") -> list[ChatMessage]:
    """System + user messages about the fact ``alias`` of ``bundle``: its line, then the lines of the facts it
    replaces, is replaced by or conflicts with (at most ``MAX_RELATED``)."""
    t = load_prompt(prompt)
    extra = t.model_extra or {}
    alias_of = bundle.alias_of()
    item = next(it for it in bundle.items if it.alias == alias)
    linked = {*item.state.supersedes, *item.state.superseded_by, *item.state.conflicts_with}
    holder_of = ({it.fact.fact_id: it.fact.holder for it in bundle.items}
                 if extra.get("partner_marks", True) else None)
    related = [fact_line(it, alias_of, holder_of=holder_of) for it in bundle.items
               if it.fact.fact_id in linked][:MAX_RELATED]
    user = t.user.format(request=request, options=options_block(choices), whose=holder_heading(item.fact.holder),
                         fact=fact_line(item, alias_of, holder_of=holder_of),
                         related=("Related:\n" + "\n".join(related)) if related else "")
    return [ChatMessage(role="system", content=t.system), ChatMessage(role="user", content=user.rstrip())]


def fact_line_text(output: str) -> str:
    """The first non-empty line of a per-fact answer, without a handle the model may have written.

    >>> fact_line_text("F3: historical | ignore | low\\nextra")
    'historical | ignore | low'
    """
    for line in output.strip().splitlines():
        if line.strip():
            return _HANDLE.sub("", line.strip())
    return ""


def assemble(aliases: Sequence[str], outputs: Sequence[str]) -> str:
    """The state text: one ``F<n>: <line>`` per fact, in the given order.

    >>> assemble(["F1", "F2"], ["historical | ignore | low", "evidence | use | high"])
    'F1: historical | ignore | low\\nF2: evidence | use | high'
    """
    return "\n".join(f"{a}: {fact_line_text(o)}" for a, o in zip(aliases, outputs))


def fact_targets(state_text: str, aliases: Sequence[str]) -> dict[str, str]:
    """A whole state's lines per fact without their handles (what a per-fact call should answer), role
    first; facts the state does not name are ``irrelevant | ignore | low`` (the reader weighs both 0).

    >>> fact_targets("F2: use | evidence | high", ["F1", "F2"])
    {'F1': 'irrelevant | ignore | low', 'F2': 'evidence | use | high'}
    """
    state = parse_state(state_text, aliases)
    named = {f.alias: ReasoningState(facts=(f,)).render(role_first=True).split(": ", 1)[1] for f in state.facts}
    return {a: named.get(a, "irrelevant | ignore | low") for a in aliases}
