"""``retrieval.evidence.built`` (unvalidated construction on the request path, issue 45) must give the very
object validation gives: equal, the same dump and JSON, the same repr and set fields; a field left out takes
its default. If pydantic changes what an instance holds, these fail."""

from __future__ import annotations

from graph.models import Fact, RelationalState
from retrieval.evidence import EvidenceItem, SeedHit, built


def _pair(cls: type, **values: object) -> tuple[object, object]:
    return cls(**values), built(cls, **values)


def test_built_equals_validated() -> None:
    f = Fact(fact_id="u:f1", user_id="u", statement="Caroline: I moved to Sweden", holder="Caroline")
    st = RelationalState(fact_id="u:f1", validity="current", supersedes=("u:f0",))
    for cls, values in [
        (EvidenceItem, dict(alias="F1", fact=f, state=st, seed=True, score=0.25, group=0, brief=None)),
        (EvidenceItem, dict(alias="F2", fact=f, state=st, seed=False, score=None, group=3, brief="moved Sweden")),
        (SeedHit, dict(fact_id="u:f1", score=0.031, routes={"fact_dense": 1, "turn_bm25": 4}, dense_rank=1,
                       dense_score=0.8, text_rank=None, text_score=None)),
        (SeedHit, dict(fact_id="u:f2", score=0.5, routes={"neighbour": 2}, dense_rank=None, dense_score=None,
                       text_rank=3, text_score=2.5, window=True)),
    ]:
        want, got = _pair(cls, **values)
        assert got == want and type(got) is type(want)
        assert got.model_dump() == want.model_dump()
        assert got.model_dump_json() == want.model_dump_json()
        assert repr(got) == repr(want)
        assert got.model_fields_set == want.model_fields_set
    assert built(SeedHit, fact_id="x", score=1.0, routes={}).window is False  # the default
