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
    from evomem.examples import history_batches, load_history
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
    for b in history_batches(history):
        mem.apply(b.model_copy(update={"session_hash": b.session_id}))
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
