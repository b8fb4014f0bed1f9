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
        n = len(rows)
        p = shared_prefix(rows)
        model = self.model
        dev = model.device
        with torch.no_grad():
            cache = None
            mask = torch.ones((n, 0), dtype=torch.long, device=dev)
            pos = [0] * n
            if p:
                cache = self._prefix_cache(rows[0][:p])
                cache.batch_repeat_interleave(n)
                mask = torch.ones((n, p), dtype=torch.long, device=dev)
                pos = [p] * n

            def step(parents: list[int], chunks: list[list[int]], read: list[int] | None = None) -> Any:
                """Feed ``chunks[k]`` after row ``parents[k]``'s tokens (a row may be fed several branches):
                the cache, mask and positions become those of the ``len(chunks)`` new rows; logits of every
                position in ``read`` (positions counted from the start of the fed width; default: the last),
                in that order."""
                nonlocal cache, mask, pos
                width = max(len(c) for c in chunks)
                rows_n = len(chunks)
                ids = torch.full((rows_n, width), self.pad, dtype=torch.long)
                m = torch.zeros((rows_n, width), dtype=torch.long)
                pid = torch.zeros((rows_n, width), dtype=torch.long)
                new_pos = []
                for r, (par, c) in enumerate(zip(parents, chunks)):
                    k = width - len(c)
                    ids[r, k:] = torch.tensor(c)
                    m[r, k:] = 1
                    pid[r, k:] = torch.arange(pos[par], pos[par] + len(c))
                    pid[r, :k] = pos[par]
                    new_pos.append(pos[par] + len(c))
                if parents != list(range(len(pos))):
                    index = torch.tensor(parents, device=dev)
                    mask = mask[index]
                    if cache is not None:
                        cache.batch_select_indices(index)
                mask = torch.cat([mask, m.to(dev)], 1)
                pos = new_pos
                keep = torch.tensor(read if read is not None else [width - 1], device=dev)
                o = model(ids.to(dev), attention_mask=mask, position_ids=pid.to(dev), past_key_values=cache,
                          use_cache=True, logits_to_keep=keep)  # the LM head only where a decision is read
                cache = o.past_key_values
                return o.logits.float()

            logits = step(list(range(n)), [r[p:] for r in rows])[:, -1]
            nodes = [self.trie.root] * n
            taken: list[list[int]] = [[] for _ in range(n)]
            done = [False] * n
            at_row = list(range(n))  # the cache row that continues fact r
            while not all(done):
                # each row takes its decision and the forced tokens after it (``chunk``), and is fed that with
                # every option of its next decision point appended (with the forced tokens after each): one
                # forward then gives that next decision (at the chunk's end, the same in every branch) and the
                # logits after the chosen branch, so a batched forward settles two decisions
                parents: list[int] = []
                chunks: list[list[int]] = []
                plan: list[tuple[int, list[int], dict[Any, Any]]] = []  # (length of chunk, branch tail, node after)
                for r in range(n):
                    if done[r]:
                        parents.append(at_row[r])
                        chunks.append([self.pad])  # a masked filler: the row is finished
                        plan.append((0, [], {}))
                        continue
                    chunk, node = _walk(nodes[r], _argmax(nodes[r], logits[r]))
                    taken[r] += chunk
                    nodes[r] = node
                    options = [t for t in node if t is not None]
                    if not options:
                        done[r] = True
                        parents.append(at_row[r])
                        chunks.append([self.pad])
                        plan.append((0, [], {}))
                        continue
                    for t in options:
                        tail, after = _walk(node, t)
                        parents.append(at_row[r])
                        chunks.append(chunk + tail)
                        plan.append((len(chunk), tail, after))
                if all(done):
                    break
                width = max(len(c) for c in chunks)
                ends = {k: width - len(chunks[k]) + plan[k][0] - 1 for k in range(len(chunks)) if plan[k][1]}
                read = sorted({*ends.values(), width - 1})
                full = step(parents, chunks, read)
                keep: list[int] = []
                nxt = torch.zeros_like(logits)
                for r in range(n):
                    ks = [k for k, par in enumerate(parents) if par == at_row[r]]
                    if done[r]:
                        keep.append(ks[0])
                        continue
                    k0 = ks[0]
                    at = read.index(ends[k0])  # the chunk's last token
                    first = {plan[k][1][0]: k for k in ks}
                    k = first[_argmax(nodes[r], full[k0, at])]
                    taken[r] += plan[k][1]
                    nodes[r] = plan[k][2]
                    nxt[r] = full[k, -1]
                    done[r] = not [x for x in nodes[r] if x is not None]
                    keep.append(k)
                at_row = keep  # the next step selects these rows of the cache (the chosen branches)
                logits = nxt
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
