"""The routes of ``evomem serve``, one router per resource; ``serving.api.create_app`` mounts them all.

Each module holds its resource's request/response models and thin route functions; what they share
(auth, user-id validation, per-user scoping) is in serving/deps.py, how errors become HTTP answers in
serving/errors.py.
"""

from __future__ import annotations

from fastapi import APIRouter

from serving.routes import (answer, chat, cypher, facts, forget, history, ingest, ops, profile, retrieval, transfer,
                            users)

ROUTERS: tuple[APIRouter, ...] = (ops.router, users.router, ingest.router, forget.router, history.router, facts.router,
                                  retrieval.router, answer.router, transfer.router, cypher.router, chat.router,
                                  profile.router)
