"""The Reasoning State: which retrieved facts apply to this request, in what role, with what priority.

Text format the policy emits (one line per fact it mentions, then at most four short rules):

    F2: use | current-preference | high
    F1: ignore | historical | low
    F3: use | constraint | high
    RULE: Suggest a low-intensity beach trip; avoid strenuous activity (F3).

A fact line may also name the role first (``F1: historical | ignore | low``): prompts that ask a small
policy to say what a memory *is* before deciding its use (``policy_described_v1``) get that order, and
both parse to the same state.

``parse_state`` is strict: any line outside the grammar, an alias not in the evidence, a repeated
alias, or no fact line at all raises ``StateParseError`` — never a silently empty state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["current-preference", "historical", "constraint", "evidence", "irrelevant"]
Priority = Literal["high", "medium", "low"]
ROLES: tuple[str, ...] = ("current-preference", "historical", "constraint", "evidence", "irrelevant")
PRIORITIES: tuple[str, ...] = ("high", "medium", "low")
MAX_RULES = 4
MAX_RULE_WORDS = 40
MAX_STATE_WORDS = 192  # the one length limit of a state (whitespace words), in training, the bench and serving


class FactUse(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    alias: str = Field(pattern=r"^F\d+$")
    use: bool
    role: Role
    priority: Priority


class ReasoningState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    facts: tuple[FactUse, ...] = Field(min_length=1)
    rules: tuple[str, ...] = Field(default=(), max_length=MAX_RULES)

    def render(self, role_first: bool = False) -> str:
        """The canonical text; ``role_first`` writes ``F1: historical | ignore | low``.

        >>> ReasoningState(facts=(FactUse(alias="F1", use=False, role="historical", priority="low"),)).render(True)
        'F1: historical | ignore | low'
        """
        lines = [f"{f.alias}: {f.role} | {'use' if f.use else 'ignore'} | {f.priority}" if role_first else
                 f"{f.alias}: {'use' if f.use else 'ignore'} | {f.role} | {f.priority}" for f in self.facts]
        lines += [f"RULE: {r}" for r in self.rules]
        return "\n".join(lines)


class StateParseError(ValueError):
    """The policy's output is not a valid Reasoning State; ``line`` is the 1-based offending line (0 = whole)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


_FACT = re.compile(r"^(F\d+)\s*:\s*(use|ignore)\s*\|\s*([a-z-]+)\s*\|\s*(high|medium|low)$", re.I)
_FACT_ROLE_FIRST = re.compile(r"^(F\d+)\s*:\s*([a-z-]+)\s*\|\s*(use|ignore)\s*\|\s*(high|medium|low)$", re.I)
_RULE = re.compile(r"^RULE\s*:\s*(.+)$", re.I)


def parse_state(text: str, aliases: Iterable[str] | None = None) -> ReasoningState:
    """Parse the policy's text; ``aliases`` (if given) are the fact handles present in the evidence.

    >>> parse_state("F1: historical | ignore | low") == parse_state("F1: ignore | historical | low")
    True
    """
    known = set(aliases) if aliases is not None else None
    facts: list[FactUse] = []
    rules: list[str] = []
    seen: set[str] = set()
    for n, raw in enumerate(text.strip().splitlines(), start=1):
        line = raw.strip().strip("`").strip()
        if not line:
            continue
        fields: tuple[str, ...] | None = None
        if m := _FACT.match(line):
            fields = m.groups()
        elif m := _FACT_ROLE_FIRST.match(line):
            alias_, role_, use_, prio_ = m.groups()
            fields = (alias_, use_, role_, prio_)
        if fields is not None:
            alias, use, role, prio = fields[0].upper(), fields[1].lower(), fields[2].lower(), fields[3].lower()
            if role not in ROLES:
                raise StateParseError(f"unknown role {role!r} (one of {', '.join(ROLES)})", n)
            if known is not None and alias not in known:
                raise StateParseError(f"{alias} is not one of the retrieved facts", n)
            if alias in seen:
                raise StateParseError(f"{alias} appears twice", n)
            seen.add(alias)
            facts.append(FactUse(alias=alias, use=use == "use", role=role, priority=prio))  # type: ignore[arg-type]
            continue
        m = _RULE.match(line)
        if m:
            rule = m.group(1).strip()
            if len(rule.split()) > MAX_RULE_WORDS:
                raise StateParseError(f"rule longer than {MAX_RULE_WORDS} words", n)
            rules.append(rule)
            if len(rules) > MAX_RULES:
                raise StateParseError(f"more than {MAX_RULES} rules", n)
            continue
        raise StateParseError(f"cannot parse {line[:60]!r} (expected 'F<n>: use|ignore | <role> | high|medium|low', "
                              "role first, or 'RULE: <text>')", n)
    if not facts:
        raise StateParseError("no fact lines: a Reasoning State must say how at least one fact is used")
    return ReasoningState(facts=tuple(facts), rules=tuple(rules))


def state_words(text: str) -> int:
    """A state's length as the limit counts it: whitespace-separated words.

    >>> state_words("F1: use | evidence | high")
    6
    """
    return len(text.split())


def fit_state(state: ReasoningState, max_words: int = MAX_STATE_WORDS) -> ReasoningState:
    """``state`` cut to ``max_words`` (``MAX_STATE_WORDS``): rules first (they say what changes the answer), then
    fact lines in order (a per-fact policy writes them in retrieval order, best first) while they fit; at
    least one fact line always stays. The same cut wherever a state is used — the reward, the bench and
    serving — so a long bundle's state is shortened the same way everywhere instead of scoring 0 in one
    place and passing in another.

    >>> s = parse_state("\\n".join(f"F{k}: use | evidence | low" for k in range(1, 50)) + "\\nRULE: keep F3")
    >>> fit_state(s).render().count("\\n") + 1 <= 33, fit_state(s).rules
    (True, ('keep F3',))
    """
    text = state.render()
    if state_words(text) <= max_words:
        return state
    rules: list[str] = []
    used = 0
    for r in state.rules:
        n = state_words(f"RULE: {r}")
        if used + n <= max_words // 2:  # rules never take more than half the room
            rules.append(r)
            used += n
    facts = [state.facts[0]]
    used += state_words(ReasoningState(facts=(state.facts[0],)).render())
    for f in state.facts[1:]:
        n = state_words(ReasoningState(facts=(f,)).render())
        if used + n > max_words:
            break
        facts.append(f)
        used += n
    return ReasoningState(facts=tuple(facts), rules=tuple(rules))
