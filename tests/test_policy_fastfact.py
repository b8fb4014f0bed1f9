"""The per-fact policy as a classification (policy/fastfact.py): same lines as generation on the ship gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.fastfact import Trie, answer_lines, shared_prefix
from policy.state import parse_state


def test_every_answer_line_parses_and_the_trie_holds_them_all() -> None:
    lines = answer_lines()
    assert len(set(lines)) == 30
    for x in lines:
        parse_state(f"F1: {x}", ["F1"])
    t = Trie([[1, 2, 3], [1, 2, 4], [5]])
    assert set(t.root) == {1, 5} and set(t.root[1][2]) == {3, 4} and None in t.root[5]


def test_shared_prefix_leaves_every_row_a_token_of_its_own() -> None:
    assert shared_prefix([[1, 2, 3], [1, 2, 3]]) == 2
    assert shared_prefix([[1], [1, 2]]) == 0


@pytest.mark.slow
def test_fast_path_makes_the_shipped_adapters_decisions_on_the_ship_gate(tmp_path: Path) -> None:
    """The example history's five requests (MiniLM store, k=4, as `make demo` and `evomem ship-policy`): the
    batched path writes exactly the lines greedy generation writes, and both pass the gate (policy/needs.py);
    serving's LocalLearnedPolicy.state takes the fast path and gives the same state."""
    from evomem.examples import load_fixture, load_history
    from evomem.settings import Settings
    from memcore.memory import Memory
    from policy.fastfact import FastFactPolicy
    from policy.learned import LocalLearnedPolicy
    from policy.needs import StateNeeds
    from policy.perfact import assemble
    from policy.shipped import shipped_policy_dir

    pol = LocalLearnedPolicy.from_checkpoint(shipped_policy_dir(), temperature=0.0, max_new_tokens=192)
    fast = FastFactPolicy(pol)
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}))
    history = load_history()
    load_fixture(mem, history)
    for req in history["requests"]:
        bundle = mem.retrieve(req["user_id"], req["request"], k=4)
        aliases = [it.alias for it in bundle.items]
        generated = pol.state_texts([(req["request"], bundle, None)], batch_size=len(aliases))[0]
        classified = assemble(aliases, fast.line_texts(req["request"], bundle))
        assert classified == generated, req["request"]
        needs = StateNeeds.model_validate(req["needs"])
        state = pol.state(req["request"], bundle)  # the fast path, as serving calls it
        assert state == parse_state(generated, aliases)
        assert needs.misses([(it.alias, it.fact.statement) for it in bundle.items], state) == [], req["request"]
    mem.close()


def _reference_lines(pol: object, fast: object, request: str, bundle: object, choices: object) -> list[str]:
    """The definition the batched path must meet: each fact's full prompt alone, no cache, one forward per
    token, greedy restricted to the grammar's trie (forced tokens fed one by one like any other)."""
    import torch

    out = []
    for ids in fast.prompts(request, bundle, choices):  # type: ignore[attr-defined]
        node, taken = fast.trie.root, []  # type: ignore[attr-defined]
        while [t for t in node if t is not None]:
            with torch.no_grad():
                logits = pol.model(torch.tensor([ids + taken])).logits[0, -1]  # type: ignore[attr-defined]
            t = max((x for x in node if x is not None), key=lambda x: float(logits[x]))
            taken.append(t)
            node = node[t]
        out.append(pol.tokenizer.decode(taken))  # type: ignore[attr-defined]
    return out


def test_batched_decisions_equal_one_fact_at_a_time_on_a_tiny_model() -> None:
    """A tiny random Llama on the SmolLM2 tokenizer (large random weights, so its decisions vary): for
    synthetic bundles of 2-8 facts, with and without options, the batched path (template head kept across
    requests, suffixes in one padded batch, two decisions per forward) gives every fact the line the
    one-prompt-at-a-time greedy-in-the-grammar reference gives; the head is learnt and reused."""
    import torch

    from policy.fastfact import FastFactPolicy
    from policy.learned import LocalLearnedPolicy
    from policy.models import TinyModelConfig, build_tiny_model, load_smollm2_tokenizer
    from training_data.synthetic import SyntheticConfig, SyntheticSource

    tok = load_smollm2_tokenizer()
    tok.padding_side = "left"
    model = build_tiny_model(tok, TinyModelConfig(), seed=3).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # large random weights: decisions that vary with the prompt, margins far above rounding
        for w in model.parameters():
            if w.dim() == 2:
                w.copy_(torch.randn(w.shape, generator=g) * 0.3)
    pol = LocalLearnedPolicy(model, tok, prompt="policy_fact_v2", temperature=0.0)
    fast = FastFactPolicy(pol)
    insts = [i for i in SyntheticSource(SyntheticConfig(n=10)).instances(0) if 2 <= len(i.bundle().items) <= 8][:5]
    assert len(insts) >= 4
    lines_seen: set[str] = set()
    for inst in insts:
        for choices in (inst.choices, None):
            bundle = inst.bundle()
            got = fast.line_texts(inst.request, bundle, choices)
            assert got == _reference_lines(pol, fast, inst.request, bundle, choices), inst.instance_id
            assert all(x in answer_lines() for x in got)
            lines_seen.update(got)
    assert fast._head is not None and len(fast._head[0]) >= 8  # the system message's tokens, run once
    assert len(lines_seen) >= 3  # the decisions vary, so equality is not met by a constant
