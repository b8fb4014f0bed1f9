"""What every route of ``evomem serve`` shares: the deployment's settings and dependencies (``ApiDeps``,
kept on ``app.state``) and the FastAPI dependencies that authenticate the caller, validate the user id
and check that the caller's key may act for that user.

Order on a route that names a user: the key (401), then the user id's form (400), then the key's
binding (403), then, for reads, that the user exists (404). A bound key asking about an unknown user
gets 403, never 404, so the API is no oracle of which users exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Depends, Header, Request

from graph.ids import validate_user_id
from induction.redact import RedactConfig
from memcore.memory import Memory
from serving.config import ApiKey as ApiKey
from serving.config import ApiSettings as ApiSettings
from serving.cypher_route import CypherGate
from serving.limits import KeyBudget
from serving.metrics import Metrics
from serving.openai_wire import ApiError, bearer_ok
from serving.pipeline import AnswerPipeline

IngestFn = Callable[[str, dict[str, Any]], dict[str, Any]]
USER_HEADER = "X-EvoMem-User"


def load_api_keys(single: str | None, path: str | None) -> list[ApiKey]:
    """``single``: one key for every user. ``path``: YAML/JSON list of {key, name?, users?}."""
    keys = [ApiKey(key=single, name="deployment")] if single else []
    if path:
        import yaml

        data = yaml.safe_load(Path(path).read_text())
        data = data.get("keys", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of {{key, name, users}}")
        keys += [ApiKey.model_validate(d) for d in data]
    return keys


@dataclass
class ApiDeps:
    memory: Memory
    pipeline: AnswerPipeline
    settings: ApiSettings = field(default_factory=ApiSettings)
    ingest: IngestFn | None = None
    metrics: Metrics = field(default_factory=Metrics)
    cypher_gate: CypherGate = field(default_factory=CypherGate)
    # induction's Ingestor behind ``ingest``: the transfer route (/v1/state/external) runs external items
    # through its extractor and adjudicator on a scratch store. None: an offline one is made on demand.
    ingestor: Any | None = None
    redact: RedactConfig = field(default_factory=RedactConfig)  # for /edits; sessions use the ingest config's
    external_budget: KeyBudget | None = None  # /v1/state/external per key; made from settings on first use

    def budget(self) -> KeyBudget:
        if self.external_budget is None:
            self.external_budget = KeyBudget(self.settings.external_budget_s, self.settings.external_window_s)
        return self.external_budget


def get_deps(request: Request) -> ApiDeps:
    """The app's ``ApiDeps`` (routers are module-level; the app they are mounted on carries the state)."""
    deps: ApiDeps = request.app.state.deps
    return deps


def principal(authorization: str | None = Header(default=None), deps: ApiDeps = Depends(get_deps)) -> ApiKey | None:
    """The caller's key (None when auth is off); 401 otherwise."""
    cfg = deps.settings
    if not cfg.require_auth:
        return None
    for k in cfg.keys:
        if bearer_ok(authorization, [k.key]):
            return k
    raise ApiError(401, "Missing or invalid API key; send 'Authorization: Bearer <key>'.", "invalid_api_key")


def checked_user_id(user_id: str, param: str = "user_id") -> str:
    """400 with a sentence for an id outside the documented pattern (graph.ids.USER_ID_PATTERN)."""
    try:
        return validate_user_id(user_id)
    except ValueError as e:
        msg = str(e)
        raise ApiError(400, f"{msg[:1].upper()}{msg[1:]}.", "invalid_user_id", param) from e


def user_scope(user_id: str, who: ApiKey | None) -> str:
    """403 unless the key may act for ``user_id`` (which must already be validated)."""
    if who is not None and not who.allows(user_id):
        raise ApiError(403, f"This API key may not access user {user_id!r}.", "user_not_allowed")
    return user_id


def scoped(user_id: str, who: ApiKey | None = Depends(principal)) -> str:
    """The path's ``user_id``, validated and allowed for the caller's key."""
    return user_scope(checked_user_id(user_id), who)


def existing(user_id: str = Depends(scoped), deps: ApiDeps = Depends(get_deps)) -> str:
    """As ``scoped``, and the user has memories (404 otherwise)."""
    deps.memory.require_user(user_id)
    return user_id
