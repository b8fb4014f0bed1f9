"""The profile view (memcore/profile.py) on both backends, and its HTTP route."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from induction.forget import retract
from memcore.profile import build_profile


def test_profile_groups_current_facts_and_counts_the_rest(memory: Any) -> None:
    p = build_profile(memory, "maya", latest=3)
    assert p.counts == {"current": 4, "superseded": 1, "disputed": 0, "expired": 0, "retracted": 0}
    assert p.total_facts == 5
    shown = {f.fact_id for g in p.concepts for f in g.facts}
    assert "maya::f::hiking" not in shown and "maya::f::beach" in shown  # superseded facts are counted, not shown
    beach = next(g for g in p.concepts if any(f.fact_id == "maya::f::beach" for f in g.facts))
    assert beach.path[:2] == ["memory", "travel"]
    assert [c.seq for c in p.latest_changes] == sorted((c.seq for c in p.latest_changes), reverse=True)
    assert len(p.latest_changes) == 3
    leo = build_profile(memory, "leo")
    assert leo.counts["disputed"] == 2 and not any(f.fact_id.startswith("maya") for g in leo.concepts for f in g.facts)


def test_profile_after_a_retraction_names_it(memory: Any) -> None:
    retract(memory, "maya", fact_id="maya::f::beach", reason="user asked")
    p = build_profile(memory, "maya", latest=1)
    assert p.counts["retracted"] == 1
    # forgetting the newer fact brings the older one back (graph/rules.py)
    assert p.counts["superseded"] == 0
    assert p.latest_changes[0].op == "RETRACT" and "forgot" in p.latest_changes[0].summary
    assert p.latest_changes[0].fact_ids == ["maya::f::beach"]


def test_profile_route(memory: Any) -> None:
    from serving.api import ApiDeps, ApiKey, ApiSettings, create_app
    from serving.pipeline import AnswerPipeline
    from policy.rule import RulePolicy

    deps = ApiDeps(memory=memory, pipeline=AnswerPipeline(memory, RulePolicy(), None),  # type: ignore[arg-type]
                   settings=ApiSettings(keys=[ApiKey(key="profile-key-0123")]))
    with TestClient(create_app(deps), headers={"Authorization": "Bearer profile-key-0123"}) as c:
        r = c.get("/v1/users/maya/profile", params={"latest": 2})
        assert r.status_code == 200, r.text
        assert r.json()["counts"]["current"] == 4 and len(r.json()["latest_changes"]) == 2
        assert c.get("/v1/users/ghost/profile").status_code == 404
        assert c.get("/v1/users/maya/profile", params={"latest": -1}).status_code == 422
