"""The HTTP API (FastAPI): ingest, facts with relational states, search/explain, Reasoning State,
answer, forget/purge, read-only Cypher, health, metrics — and an OpenAI-compatible
``/v1/chat/completions`` that injects the user's memory, so agent clients can point at it unchanged.

``create_app(deps)`` assembles the pieces: one router per resource (serving/routes/), the shared
dependencies (serving/deps.py: auth, user-id validation, per-user scoping), the error handlers
(serving/openai_wire.py for the wire-level ones, serving/errors.py for the domain ones), metrics and
the body limit.

Security model: one or more API keys per deployment (``Authorization: Bearer``); a key may be bound
to a set of users, and every route that names a user checks the binding (403 otherwise). User ids
must match ``graph.ids.USER_ID_PATTERN`` (400 otherwise). Errors always have the OpenAI shape
``{"error": {"message", "type", "code"}}`` with a sentence as message. Reads never write; writes go
through ``Memory.apply`` (one atomic batch), the injected ingest function (atomic per session) or
induction/forget.py (under the per-user lock), so a failed request leaves the store as it was.
"""

from __future__ import annotations

from fastapi import FastAPI

from serving.deps import ApiDeps, ApiKey, ApiSettings, IngestFn, load_api_keys
from serving.errors import install_api_error_handlers
from serving.metrics import install_metrics
from serving.openai_wire import BodyLimitMiddleware, install_error_handlers
from serving.routes import ROUTERS

__all__ = ["ApiDeps", "ApiKey", "ApiSettings", "IngestFn", "create_app", "load_api_keys"]


def create_app(deps: ApiDeps) -> FastAPI:
    app = FastAPI(title="EvoMemState API", version="1",
                  description="Personal long-term memory with relational states and Reasoning States.")
    app.state.deps = deps  # routers are module-level and read their dependencies from here
    install_error_handlers(app, validation_status=422)
    install_api_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_metrics(app, deps.metrics)
    app.add_middleware(BodyLimitMiddleware, max_bytes=deps.settings.max_body_bytes)  # outermost: before parsing
    return app
