"""The Memory facade's public behaviour that the lower layers' tests do not reach: undo through the
store (both backends), and the commit retry on a concurrent writer."""

from __future__ import annotations

from typing import Any

import pytest

from evomem.examples import history_batches, load_history
from memcore.memory import Memory
from graph.edits import EditRejected
from graph.snapshot import ChangeSet
from graph.store import ConcurrentModification, UnknownUser


def _maya_batches() -> list[Any]:
    return [b.model_copy(update={"session_hash": b.session_id}) for b in history_batches(load_history())
            if b.user_id == "maya"]


def test_undo_is_a_stack_and_restores_the_ontology(store: Any, embedder: Any) -> None:
    mem = Memory(store, embedder)
    *first, last = _maya_batches()
    for b in first:
        mem.apply(b)
    before = store.load_snapshot("maya")
    mem.apply(last)  # CreateConcept + AttachFact (maya's knee): two edits
    after = store.load_snapshot("maya")
    create, attach = sorted((e for e in after.edits.values() if e.edit_id not in before.edits), key=lambda e: e.seq)
    assert (create.op, attach.op) == ("CREATE", "ATTACH") and set(after.facts) - set(before.facts) == {"maya::f::knee"}

    with pytest.raises(EditRejected, match="undo the later edits first"):
        mem.undo("maya", create.edit_id)
    cs = mem.undo("maya", attach.edit_id)
    assert isinstance(cs, ChangeSet) and cs.new_version == after.version + 1
    mem.undo("maya", create.edit_id)
    undone = store.load_snapshot("maya")
    assert set(undone.facts) == set(before.facts) and set(undone.concepts) == set(before.concepts)
    assert undone.edits[attach.edit_id].undone_at is not None  # the log keeps the edit, marked undone
    with pytest.raises(EditRejected, match="already undone"):
        mem.undo("maya", attach.edit_id)
    with pytest.raises(UnknownUser):
        mem.undo("nobody", attach.edit_id)


class _OneConflict:
    """A store whose first commit loses a race: another writer committed in between."""

    def __init__(self, inner: Any):
        self.inner, self.commits = inner, 0

    def commit(self, changes: ChangeSet) -> None:
        self.commits += 1
        if self.commits == 1:
            raise ConcurrentModification("version moved")
        self.inner.commit(changes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_apply_retries_once_on_a_concurrent_modification(embedded_memory: Memory) -> None:
    racy = _OneConflict(embedded_memory.store)
    mem = Memory(racy, embedded_memory.embedder)  # type: ignore[arg-type]
    first = _maya_batches()[0]
    snap, cs = mem.apply(first)
    assert racy.commits == 2  # rebuilt from a fresh snapshot and committed on the second try
    assert set(embedded_memory.store.load_snapshot("maya").facts) == set(snap.facts) != set()


def test_apply_gives_up_after_max_retries(embedded_memory: Memory) -> None:
    class Always(_OneConflict):
        def commit(self, changes: ChangeSet) -> None:
            self.commits += 1
            raise ConcurrentModification("always")

    racy = Always(embedded_memory.store)
    mem = Memory(racy, embedded_memory.embedder, max_commit_retries=3)  # type: ignore[arg-type]
    with pytest.raises(ConcurrentModification):
        mem.apply(_maya_batches()[0])
    assert racy.commits == 3 and "maya" not in embedded_memory.store.users()
