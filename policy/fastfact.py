"""The per-fact policy as a classification: all facts of a request in a few batched forwards (issue 45 item 3).

The old path (``LocalLearnedPolicy.state_texts`` with a ``unit: fact`` prompt) generates each fact's line
token by token, every fact's prompt prefilled from its first token. Here:

1. Every fact's prompt is tokenised as the old path tokenises it; the longest token prefix they all share
   (system message, request, options) is run **once** and its KV cache repeated for the N facts. The part
   of it every request shares (the template's head: system message, the user turn's opening) is learnt
   from two consecutive requests, run once per process and kept, so a request runs only its own words.
2. Each fact's own suffix (its memory line, related lines, the assistant header) is run in one batched
   forward: suffixes of different lengths are left-padded *inside* the sequence, masked out, and given
   contiguous position ids, so every row sees exactly the tokens the old path's row saw.
3. The answer is one of the few lines the grammar allows (``<role> | use|ignore | high|medium|low``, role
   first as ``policy_fact_v*`` ask). Their token sequences form a trie; decoding is greedy **restricted to
   the trie**: where only one token may follow it is fed without a decision, where several may, the
   highest-logit one is taken. Each row is fed its decision, the forced tokens after it and, as parallel
   rows, every option of its next decision point: one forward settles two decisions (the LM head is run
   only at the positions read). So a request costs the request's part of the prefix, one batched suffix
   forward and one short batched decision forward (the role is read off the suffix forward; use/ignore and
   priority off the next), instead of ~10
   decoding steps over N full prompts.

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
HEAD_MIN_TOKENS = 8  # a shared template head shorter than this is not worth keeping


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


def _argmax(node: dict[Any, Any], logits: Any) -> int:
    """The allowed token (a child of ``node``) with the highest logit: greedy restricted to the grammar."""
    return max((t for t in node if t is not None), key=lambda x: float(logits[x]))


def _walk(node: dict[Any, Any], t: int) -> tuple[list[int], dict[Any, Any]]:
    """Take ``t`` at ``node`` and every forced token after it (a node with one child and no line end): the
    tokens fed and the node reached (a decision point, or a line's end)."""
    chunk = [t]
    node = node[t]
    while len(node) == 1 and None not in node:
        (t,) = node.keys()
        chunk.append(t)
        node = node[t]
    return chunk, node


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
        self._head: tuple[list[int], Any] | None = None  # token ids every request's prompts start with, and their KV
        self._last_prefix: list[int] = []  # the previous request's shared prefix (where the head is learnt from)

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
        p = shared_prefix(rows)
        with torch.inference_mode():
            taken = _Packed(self, rows, p).decide()
        return [self.tokenizer.decode(t) for t in taken]

    def _prefix_cache(self, prefix: list[int]) -> Any:
        """The KV cache of ``prefix`` (batch 1), a fresh object the caller may extend.

        The template's head (system message, the user turn's opening) is the same for every request: it is
        learnt as the token prefix two consecutive requests share, run once, and kept; a request then runs
        only its own part of the prefix on a copy of the head's cache. Same tokens at the same positions, so
        the same keys and values up to float rounding."""
        import copy

        import torch

        model, dev = self.model, self.model.device
        head = self._head
        if head is None or prefix[: len(head[0])] != head[0]:
            h = shared_prefix([prefix + [-1], self._last_prefix + [-2]]) if self._last_prefix else 0
            self._last_prefix = list(prefix)
            head = None
            if h >= HEAD_MIN_TOKENS:
                out = model(torch.tensor([prefix[:h]], device=dev), use_cache=True, logits_to_keep=1)
                head = self._head = (prefix[:h], out.past_key_values)
        if head is None:
            return model(torch.tensor([prefix], device=dev), use_cache=True, logits_to_keep=1).past_key_values
        ids, kv = head
        cache = copy.deepcopy(kv)
        if len(prefix) > len(ids):
            cache = model(torch.tensor([prefix[len(ids):]], device=dev), past_key_values=cache, use_cache=True,
                          logits_to_keep=1).past_key_values
        return cache

    def state_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> str:
        return assemble([it.alias for it in bundle.items], self.line_texts(request, bundle, choices))

    def state(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> ReasoningState:
        return fit_state(parse_state(self.state_text(request, bundle, choices), [it.alias for it in bundle.items]))


class _Packed:
    """One request's decisions with every sequence packed into **one** row (batch 1): the facts' suffixes
    side by side after the shared prefix, then each step's decision chunks and branches after them. A 4-D
    attention mask gives every token exactly the keys its own fact's prompt has (the prefix, its own
    suffix, the tokens its fact has taken so far, causally), and position ids continue each fact's own
    sequence, so each token sees what it would see in its own prompt; nothing is padded, and branches not
    taken stay in the cache, masked out of everything after them."""

    def __init__(self, fast: FastFactPolicy, rows: list[list[int]], p: int):
        import torch

        self.fast, self.rows, self.p = fast, rows, p
        self.model = fast.model
        self.dev = self.model.device
        self.cache = fast._prefix_cache(rows[0][:p]) if p else None
        self.kv = p  # keys in the cache
        self.ctx = [list(range(p)) for _ in rows]  # each fact's keys so far
        self.pos = [p] * len(rows)  # each fact's next position
        self.torch = torch

    def feed(self, segs: list[tuple[list[int], list[int], int]]) -> tuple[Any, list[range]]:
        """Feed ``segs`` = (tokens, keys they see besides themselves, first position) in one forward: the
        logits at each segment's last token (in order) and the cache slots each segment's tokens took."""
        torch = self.torch
        q = sum(len(t) for t, _, _ in segs)
        ids: list[int] = []
        pid: list[int] = []
        slots: list[range] = []
        ends: list[int] = []
        mask = torch.zeros((q, self.kv + q), dtype=torch.bool)
        at = 0
        for toks, ctx, start in segs:
            n = len(toks)
            ids += toks
            pid += range(start, start + n)
            if ctx:
                mask[at:at + n, torch.tensor(ctx)] = True
            mask[at:at + n, self.kv + at:self.kv + at + n] = torch.ones((n, n), dtype=torch.bool).tril()
            slots.append(range(self.kv + at, self.kv + at + n))
            at += n
            ends.append(at - 1)
        o = self.model(torch.tensor([ids], device=self.dev), attention_mask=mask[None, None].to(self.dev),
                       position_ids=torch.tensor([pid], device=self.dev), past_key_values=self.cache, use_cache=True,
                       logits_to_keep=torch.tensor(ends, device=self.dev))
        self.cache = o.past_key_values
        self.kv += q
        return o.logits[0].float(), slots

    def decide(self) -> list[list[int]]:
        n, trie = len(self.rows), self.fast.trie
        logits, slots = self.feed([(r[self.p:], self.ctx[k], self.p) for k, r in enumerate(self.rows)])
        for k in range(n):
            self.ctx[k] = self.ctx[k] + list(slots[k])
            self.pos[k] += len(slots[k])
        last = [logits[k] for k in range(n)]
        nodes: list[dict[Any, Any]] = [trie.root] * n
        taken: list[list[int]] = [[] for _ in range(n)]
        live = list(range(n))
        while live:
            # each live fact takes its decision and the forced tokens after it (its chunk, which also gives its
            # next decision point's logits), and every option of that next point is fed after the chunk as a
            # branch (with the forced tokens after it): one forward settles two decisions per fact
            segs: list[tuple[list[int], list[int], int]] = []
            plan: list[tuple[int, int, list[tuple[list[int], dict[Any, Any]]]]] = []  # (fact, chunk seg, branches)
            for k in live:
                chunk, node = _walk(nodes[k], _argmax(nodes[k], last[k]))
                taken[k] += chunk
                nodes[k] = node
                options = [t for t in node if t is not None]
                if not options:
                    continue
                c = len(segs)
                segs.append((chunk, self.ctx[k], self.pos[k]))
                branches = [_walk(node, t) for t in options]
                plan.append((k, c, branches))
                # a branch sees the fact's keys and the chunk; its slots are known only after the forward,
                # so they are filled in below (the chunk's slots come right before, at a known offset)
                for tail, _ in branches:
                    segs.append((tail, [], self.pos[k] + len(chunk)))
            if not plan:
                break
            # the chunk's slots are known before the forward: fill them into its branches' keys
            base = self.kv
            offsets = [0]
            for t, _, _ in segs:
                offsets.append(offsets[-1] + len(t))
            for k, c, branches in plan:
                chunk_slots = list(range(base + offsets[c], base + offsets[c + 1]))
                for b in range(len(branches)):
                    t, _, start = segs[c + 1 + b]
                    segs[c + 1 + b] = (t, self.ctx[k] + chunk_slots, start)
            logits, slots = self.feed(segs)
            live = []
            for k, c, branches in plan:
                first = {tail[0]: b for b, (tail, _) in enumerate(branches)}
                b = first[_argmax(nodes[k], logits[c])]
                tail, after = branches[b]
                taken[k] += tail
                self.ctx[k] = self.ctx[k] + list(slots[c]) + list(slots[c + 1 + b])
                self.pos[k] += len(slots[c]) + len(tail)
                nodes[k] = after
                last[k] = logits[c + 1 + b]
                if [t for t in after if t is not None]:
                    live.append(k)
        return taken
