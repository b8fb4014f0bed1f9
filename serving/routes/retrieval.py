"""Retrieval without the answer model: ``/search`` (evidence + rendered context) and ``/explain``
(what the pipeline would use and why, optionally with the answer)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving import service
from serving.deps import ApiDeps, existing, get_deps
from serving.pipeline import AnswerResult
from serving.routes.bodies import ExplainBody, SearchBody
from serving.wire import SearchOut

router = APIRouter(tags=["retrieval"])


@router.post("/v1/users/{user_id}/search")
def search(body: SearchBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> SearchOut:
    return service.search(deps, user_id, body)


@router.post("/v1/users/{user_id}/explain")
def explain(body: ExplainBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> AnswerResult:
    return deps.pipeline.answer(user_id, body.query, choices=body.choices, generate=body.answer, **body.overrides())
