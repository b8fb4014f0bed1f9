"""The per-fact policy as a classification: all facts of a request in a few batched forwards (issue 45 item 3).

The old path (``LocalLearnedPolicy.state_texts`` with a ``unit: fact`` prompt) generates each fact's line
token by token, every fact's prompt prefilled from its first token. Here:

1. Every fact's prompt is tokenised as the old path tokenises it; the longest token prefix they all share
   (system message, request, options) is run **once** and its KV cache repeated for the N facts.
2. Each fact's own suffix (its memory line, related lines, the assistant header) is run in one batched
   forward: suffixes of different lengths are left-padded *inside* the sequence, masked out, and given
   contiguous position ids, so every row sees exactly the tokens the old path's row saw.
3. The answer is one of the few lines the grammar allows (``<role> | use|ignore | high|medium|low``, role
   first as ``policy_fact_v*`` ask). Their token sequences form a trie; decoding is greedy **restricted to
   the trie**: where only one token may follow it is fed without a decision, where several may, the
   highest-logit one is taken. So a request costs the shared prefix, one batched suffix forward and one
   batched forward per decision point (role, use/ignore, priority: about 3), instead of ~10 decoding steps
   over N full prompts.

Same decisions as the old greedy path whenever that path wrote a line of the grammar: greedy takes the
arg-max over the whole vocabulary, which is also the arg-max over the trie's allowed tokens when the
taken token is one of them (checked on the ship gate by ``tests/test_policy_fastfact.py`` and printed by
``bench/policy_fast.py``). Where the old path wrote something outside the grammar (a state that failed to
parse and fell back to the rule baseline), this path gives the closest allowed line instead.

The generated form stays for vLLM (``EndpointLearnedPolicy``): a served adapter is asked for text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policy.perfact import assemble, fact_messages
from policy.prompt import as_dicts
from policy.state import PRIORITIES, ROLES, ReasoningState, fit_state, parse_state
from retrieval.retrieve import EvidenceBundle

ANSWER_ROLES = ROLES  # the grammar's roles; a policy_fact_v* prompt names four, the parser accepts five


def answer_lines(role_first: bool = True) -> list[str]:
    """Every line a per-fact call may answer (without its handle).

    >>> len(answer_lines()), answer_lines()[0]
    (30, 'current-preference | use | high')
    """
    return [f"{r} | {u} | {p}" if role_first else f"{u} | {r} | {p}"
            for r in ANSWER_ROLES for u in ("use", "ignore") for p in PRIORITIES]


class Trie:
    """Token-id trie of the allowed lines; a node is a dict token -> child, ``None`` key marks a line's end."""

    def __init__(self, seqs: Sequence[Sequence[int]]):
        self.root: dict[Any, Any] = {}
        for s in seqs:
            node = self.root
            for t in s:
                node = node.setdefault(t, {})
            node[None] = {}


def shared_prefix(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of ``rows``, leaving each row at least one token of its own.

    >>> shared_prefix([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]])
    2
    """
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for k in range(max(n, 0)):
        if any(r[k] != first[k] for r in rows[1:]):
            return k
    return max(n, 0)


class FastFactPolicy:
    """Wraps a per-fact ``LocalLearnedPolicy`` (its model, tokenizer and prompt): ``lines`` / ``state``."""

    def __init__(self, policy: Any):
        if not policy.per_fact:
            raise ValueError(f"{policy.prompt} is not a per-fact prompt (unit: fact): nothing to classify")
        self.policy = policy
        self.model, self.tokenizer = policy.model, policy.tokenizer
        self.name = f"{policy.name}:fast"
        tok = self.tokenizer
        self.lines = answer_lines()
        self.trie = Trie([tok(x, add_special_tokens=False).input_ids for x in self.lines])
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def prompts(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None) -> list[list[int]]:
        """The token ids of each fact's prompt, exactly as the old path templates them."""
        tok, pol = self.tokenizer, self.policy
        out = []
        for it in bundle.items:
            msgs = as_dicts(fact_messages(request, bundle, it.alias, choices, prompt=pol.prompt))
            text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, **pol.chat_template_kwargs)
            out.append(tok(text, add_special_tokens=False).input_ids)
        return out

    def line_texts(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> list[str]:
        """One answer line per fact of ``bundle`` (retrieval order)."""
        import torch

        if not bundle.items:
            return []
        rows = self.prompts(request, bundle, choices)
        n = len(rows)
        p = shared_prefix(rows)
        model = self.model
        dev = model.device
        with torch.no_grad():
            cache = None
            mask = torch.ones((n, 0), dtype=torch.long, device=dev)
            pos = [0] * n
            if p:
                out = model(torch.tensor([rows[0][:p]], device=dev), use_cache=True)
                cache = out.past_key_values
                cache.batch_repeat_interleave(n)
                mask = torch.ones((n, p), dtype=torch.long, device=dev)
                pos = [p] * n

            def step(chunks: list[list[int]]) -> Any:
                nonlocal cache, mask
                width = max(len(c) for c in chunks)
                ids = torch.full((n, width), self.pad, dtype=torch.long)
                m = torch.zeros((n, width), dtype=torch.long)
                pid = torch.zeros((n, width), dtype=torch.long)
                for r, c in enumerate(chunks):
                    k = width - len(c)
                    if c:
                        ids[r, k:] = torch.tensor(c)
                        m[r, k:] = 1
                        pid[r, k:] = torch.arange(pos[r], pos[r] + len(c))
                    pid[r, :k] = pos[r]
                    pos[r] += len(c)
                mask = torch.cat([mask, m.to(dev)], 1)
                o = model(ids.to(dev), attention_mask=mask, position_ids=pid.to(dev), past_key_values=cache,
                          use_cache=True)
                cache = o.past_key_values
                return o.logits[:, -1].float()

            logits = step([r[p:] for r in rows])
            nodes = [self.trie.root] * n
            taken: list[list[int]] = [[] for _ in range(n)]
            done = [False] * n
            while not all(done):
                chunks: list[list[int]] = []
                for r in range(n):
                    if done[r]:
                        chunks.append([self.pad])  # a masked filler: the row is finished
                        continue
                    node = nodes[r]
                    options = [t for t in node if t is not None]
                    t = max(options, key=lambda x: float(logits[r, x]))  # the grammar's arg-max
                    chunk = [t]
                    node = node[t]
                    while len(node) == 1 and None not in node:  # forced tokens: no decision, fed at once
                        (t,) = node.keys()
                        chunk.append(t)
                        node = node[t]
                    taken[r] += chunk
                    nodes[r] = node
                    if not [x for x in node if x is not None]:
                        done[r] = True
                    chunks.append(chunk)
                if all(done):
                    break
                logits = step(chunks)  # a finished row's filler is attended by nothing that is read
        return [self.tokenizer.decode(t) for t in taken]

    def state_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> str:
        return assemble([it.alias for it in bundle.items], self.line_texts(request, bundle, choices))

    def state(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> ReasoningState:
        return fit_state(parse_state(self.state_text(request, bundle, choices), [it.alias for it in bundle.items]))
