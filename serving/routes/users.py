"""``GET /v1/users``: the users the caller's key may see."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving.deps import ApiDeps, ApiKey, get_deps, principal

router = APIRouter(tags=["users"])


@router.get("/v1/users")
def users(who: ApiKey | None = Depends(principal), deps: ApiDeps = Depends(get_deps)) -> dict[str, list[str]]:
    return {"users": [u for u in deps.memory.store.users() if who is None or who.allows(u)]}
