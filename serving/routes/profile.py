"""``GET /v1/users/{user_id}/profile``: current facts by concept, counts per validity, latest changes
(memcore/profile.py; the same view as ``evomem profile`` and the MCP profile resource)."""

from __future__ import annotations


from fastapi import APIRouter, Depends, Query

from graph.models import Instant
from graph.timeline import TimeView
from memcore.profile import Profile, build_profile
from serving.deps import ApiDeps, existing, get_deps

router = APIRouter(tags=["profile"])


@router.get("/v1/users/{user_id}/profile")
def profile(latest: int = Query(default=10, ge=0, le=500, description="How many recent changes to list."),
            as_of: Instant | None = Query(default=None, description="Valid time: what was true at this date."),
            known_at: Instant | None = Query(default=None, description="Recorded time: what memory knew then."),
            user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> Profile:
    return build_profile(deps.memory, user_id, latest, TimeView(as_of=as_of, known_at=known_at))
