"""State-aware answering: ``/state`` (the Reasoning State alone) and ``/answer`` (the whole pipeline)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving import service
from serving.deps import ApiDeps, existing, get_deps
from serving.pipeline import AnswerResult
from serving.routes.bodies import AnswerBody, QueryBody
from serving.wire import StateOut

router = APIRouter(tags=["answer"])


@router.post("/v1/users/{user_id}/state")
def reasoning_state(body: QueryBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> StateOut:
    return service.reasoning_state(deps, user_id, body)


@router.post("/v1/users/{user_id}/answer")
def answer(body: AnswerBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> AnswerResult:
    return deps.pipeline.answer(user_id, body.query, choices=body.choices, **body.overrides())
