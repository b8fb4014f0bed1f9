"""State-aware answering: ``/state`` (the Reasoning State alone) and ``/answer`` (the whole pipeline)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from policy.state import ReasoningState
from serving.deps import ApiDeps, existing, get_deps
from serving.pipeline import AnswerResult
from serving.routes.bodies import AnswerBody, QueryBody

router = APIRouter(tags=["answer"])


class StateOut(BaseModel):
    user_id: str
    request: str
    policy: str
    reasoning_state: str | None
    parsed: ReasoningState | None
    fallback: str | None
    aliases: dict[str, str] = Field(description="alias -> fact id")
    timings_ms: dict[str, float]


@router.post("/v1/users/{user_id}/state")
def reasoning_state(body: QueryBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> StateOut:
    res = deps.pipeline.answer(user_id, body.query, generate=False, k=body.k, traverse=body.traverse,
                               relational_states=body.relational_states, **body.time_view())
    return StateOut(user_id=user_id, request=body.query, policy=res.policy, reasoning_state=res.reasoning_state,
                    parsed=res.reasoning_state_parsed, fallback=res.policy_fallback,
                    aliases={e.alias: e.fact_id for e in res.evidence},
                    timings_ms={k: v for k, v in res.timings_ms.items() if k != "answer"})


@router.post("/v1/users/{user_id}/answer")
def answer(body: AnswerBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> AnswerResult:
    return deps.pipeline.answer(user_id, body.query, choices=body.choices, **body.overrides())
