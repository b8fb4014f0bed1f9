"""``POST /v1/state/external``: a Reasoning State for memory items retrieved by another system (mem0, a
plain RAG, ...), with the relations between them inferred by induction on a scratch store. It reads and
writes no user's memory, so it names no user; it still needs a valid key (policy/transfer.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving import service
from serving.deps import ApiDeps, ApiKey, get_deps, principal
from serving.routes.bodies import TransferBody
from serving.wire import TransferOut

router = APIRouter(tags=["answer"])


@router.post("/v1/state/external")
def external_state(body: TransferBody, who: ApiKey | None = Depends(principal),
                   deps: ApiDeps = Depends(get_deps)) -> TransferOut:
    return service.external_state(deps, body, who)
