"""Retrieval without the answer model: ``/search`` (evidence + rendered context) and ``/explain``
(what the pipeline would use and why, optionally with the answer)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from graph.render import render_context
from serving.deps import ApiDeps, existing, get_deps
from serving.pipeline import AnswerResult
from serving.routes.bodies import ExplainBody, SearchBody
from serving.routes.facts import FactWithState

router = APIRouter(tags=["retrieval"])


@router.post("/v1/users/{user_id}/search")
def search(body: SearchBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    pipe = deps.pipeline
    cfg = pipe.with_config(k=body.k, traverse=body.traverse, relational_states=body.relational_states,
                           **body.time_view())
    bundle = pipe.evidence(user_id, body.query, cfg)
    ctx = render_context(bundle, body.budget, with_state=cfg.relational_states)
    return {"user_id": user_id, "query": body.query,
            "items": [FactWithState(fact=i.fact, state=i.state).model_dump(mode="json") | {
                "alias": i.alias, "seed": i.seed, "score": i.score, "group": i.group} for i in bundle.items],
            "context": ctx.model_dump(), "explain": bundle.explain.model_dump(mode="json")}


@router.post("/v1/users/{user_id}/explain")
def explain(body: ExplainBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> AnswerResult:
    return deps.pipeline.answer(user_id, body.query, choices=body.choices, generate=body.answer, **body.overrides())
