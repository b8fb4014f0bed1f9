"""The OpenAI-compatible face: ``GET /v1/models`` and ``POST /v1/chat/completions`` with the user's
memory injected, so agent clients can point at ``evomem serve`` unchanged. The user is named by the
``user`` field or the X-EvoMem-User header; the wire format is serving/openai_wire.py's."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header
from fastapi.responses import StreamingResponse

from serving.deps import USER_HEADER, ApiDeps, ApiKey, checked_user_id, get_deps, principal, user_scope
from serving.openai_wire import ApiError, ChatCompletionRequest, completion_body, sse_chunks

router = APIRouter(tags=["openai"])


@router.get("/v1/models")
def models(_: ApiKey | None = Depends(principal), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "evomem", "object": "model", "owned_by": "evomem",
                                        "answer_model": getattr(deps.pipeline.answer_model, "name", "?")}]}


@router.post("/v1/chat/completions")
def chat_completions(req: ChatCompletionRequest, who: ApiKey | None = Depends(principal),
                     x_evomem_user: str | None = Header(default=None, alias=USER_HEADER),
                     deps: ApiDeps = Depends(get_deps)) -> Any:
    if req.user and x_evomem_user and req.user != x_evomem_user:
        raise ApiError(400, f"The 'user' field and the {USER_HEADER} header name different users.", "user_mismatch",
                       "user")
    user_id = req.user or x_evomem_user
    if not user_id:
        raise ApiError(400, f"Say whose memory to use: the 'user' field or the {USER_HEADER} header.", "user_required",
                       "user")
    user_scope(checked_user_id(user_id, "user"), who)
    deps.memory.require_user(user_id)
    if (req.max_completion_tokens or req.max_tokens or 0) > 4096:
        raise ApiError(422, "The max_tokens value must be at most 4096.", "validation_error", "max_tokens")
    res, info = deps.pipeline.chat(user_id, req.chat_messages(), max_tokens=req.max_completion_tokens or req.max_tokens,
                                   temperature=req.temperature, stop=req.stop_list(), json_schema=req.json_schema())
    model = req.model or "evomem"
    if req.stream:
        return StreamingResponse(sse_chunks(res, model, bool((req.stream_options or {}).get("include_usage"))),
                                 media_type="text/event-stream")
    return completion_body(res, model, {"evomem": {
        "user": user_id, "reasoning_state": info.reasoning_state, "policy": info.policy,
        "evidence": [{"alias": e.alias, "fact_id": e.fact_id, "validity": e.validity} for e in info.evidence],
        "timings_ms": info.timings_ms}})
