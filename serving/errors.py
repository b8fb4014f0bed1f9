"""How ``evomem serve`` turns exceptions into HTTP answers: always the OpenAI error shape, always a
sentence, the right status, and never a traceback nor a database's own message (those go to the log).

    400  invalid input the caller can fix: malformed user id, refused or invalid Cypher, a request
         the model server refused for its size or parameters, a context that does not fit
    404  unknown user or fact                         409  concurrent modification, session conflict,
    413  body over the limit (also chunked bodies)         an id that belongs to someone else
    422  a well-formed request the rules refuse       502  model server unreachable / bad reply
    503  the store is down or failed                  504  model server too slow
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from graph.cypher.errors import CypherRefused
from graph.edits import EditRejected
from graph.models import MAX_YEAR, MIN_YEAR
from graph.store import ConcurrentModification, ReadOnlyViolation, StoreError, UnknownUser
from llmclients.chat import ChatError
from llmclients.local_engine import ContextTooLong
from llmclients.openai_client import ChatHTTPError
from policy.state import StateParseError
from serving.openai_wire import ApiError, error_body

log = logging.getLogger("evomem.http")

# EditRejected rules that mean "this id is someone else's": 409, and the rule's own text (which may
# name what the id collides with) is not repeated.
FOREIGN_ID_RULES = {"cross_user", "foreign_id", "id_taken", "id_in_use", "id_conflict", "id_of_another_user"}
# What the two stores say when a commit hits a uniqueness constraint (Neo4j: ConstraintError, wrapped
# in StoreError by graph/neo4j; embedded: the engine's RuntimeError): an id already used elsewhere.
_UNIQUENESS = re.compile(r"uniqueness|duplicated primary key|already exists|ConstraintError", re.I)


def sentence(text: str) -> str:
    """``text`` as a sentence: capital first letter, one final full stop."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _err(status: int, message: str, code: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, sentence(message), code, param), status_code=status)


def id_conflict(e: BaseException) -> ApiError | None:
    """409 for a write that collided with an id the caller may not use; None for other errors."""
    texts = [str(e), type(e.__cause__).__name__ if e.__cause__ else ""]
    if isinstance(e, RuntimeError) and any(_UNIQUENESS.search(t) for t in texts):
        log.warning("write refused by a uniqueness constraint: %s", e)
        return ApiError(409, "Nothing was written: an id in this request is already in use and cannot be taken; "
                        "choose other ids (or let the server generate them).", "id_conflict")
    return None


def model_error(e: ChatError) -> ApiError:
    """502/504 (or 400 when the model server refused the caller's parameters) naming the model's role
    (answer, policy) and URL, which serving/pipeline.py attaches to the error."""
    role = getattr(e, "model_role", None) or "answer"
    name, url = getattr(e, "model_name", None), getattr(e, "model_url", None)
    who = f"The {role} model" + (f" {name!r}" if name else "") + (f" at {url}" if url else "")
    if isinstance(e, ChatHTTPError) and e.status in (400, 413, 422):
        # the model server refused this request's size or parameters: the caller can fix that
        return ApiError(400, sentence(f"{who} refused the request: {e}"), "model_request_rejected")
    if e.kind == "timeout":
        return ApiError(504, sentence(f"{who} did not answer in time: {e}"), "model_server_timeout")
    if e.kind == "connection":
        # the client's text ends in the socket error ("[Errno 111] ..."): the log has it, the caller gets the gist
        log.warning("%s could not be reached: %s", who, e)
        still = "; /search, /facts and /state still work without it" if role == "answer" else ""
        return ApiError(502, f"{who} could not be reached (cannot reach model server at {url or 'its URL'}){still}.",
                        "model_server_unreachable")
    code = {"invalid_response": "model_server_bad_response"}.get(e.kind, "model_server_error")
    what = "returned an invalid reply" if e.kind == "invalid_response" else "failed"
    return ApiError(502, sentence(f"{who} {what}: {e}"), code)


def _is_cypher_route(request: Request) -> bool:
    route = request.scope.get("route")
    return bool(route is not None and getattr(route, "path", "").endswith("/cypher"))


def _cypher_failure(e: StoreError) -> str:
    """What kind of failure the store reported for the caller's own query, without its text (which can
    quote the guard's rewritten query and internal parameter names)."""
    cause = e.__cause__
    code = getattr(cause, "code", None)  # Neo4j: Neo.ClientError.Statement.SyntaxError and the like
    if isinstance(code, str) and code.startswith("Neo."):
        return code.rsplit(".", 1)[-1]
    m = re.match(r"(?:Cypher failed: )?(\w+) exception", str(cause or e))  # embedded: "Parser exception: ..."
    return f"{m.group(1)} error" if m else "query error"


def _neo4j_driver_error() -> type[BaseException] | None:
    try:
        from neo4j.exceptions import DriverError
    except ImportError:  # pragma: no cover - neo4j is a dependency, but the API does not need it
        return None
    return DriverError


def domain_error(e: BaseException, cypher: bool = False, where: str = "") -> ApiError | None:
    """The domain errors of graph/, llmclients/ and policy/ as an ``ApiError`` (status, sentence, code),
    or None for an exception that is a crash. One home for the HTTP handlers below and the MCP tools
    (serving/mcp_server.py). ``cypher``: the caller's own Cypher query was running, so a store error
    is their input's fault (400), not the store's (503). ``where``: for the log only."""
    if isinstance(e, UnknownUser):
        return ApiError(404, sentence(str(e.args[0]) if e.args else "unknown user"), "user_not_found")  # str(KeyError) quotes
    if isinstance(e, EditRejected):
        if e.rule in FOREIGN_ID_RULES:
            log.warning("edit refused (%s): %s", e.rule, e)
            return ApiError(409, "Edit rejected, nothing was written: the batch uses an id that is not available to "
                            "this user; choose other ids.", e.rule)
        return ApiError(422, sentence(f"Edit rejected, nothing was written: {e}"), e.rule)
    if isinstance(e, CypherRefused):
        return ApiError(400, sentence(f"Cypher refused: {e}"), "cypher_refused")
    if isinstance(e, ReadOnlyViolation):
        log.info("read-only violation: %s", e)
        return ApiError(400, "Cypher refused: the query tried to write, and this route is read-only.",
                        "cypher_not_read_only")
    if isinstance(e, ChatError):
        a = model_error(e)
        return ApiError(a.status, sentence(a.message), a.code or "model_server_error")
    if isinstance(e, ContextTooLong):
        return ApiError(400, sentence(str(e)), "context_length_exceeded")
    if isinstance(e, StateParseError):
        return ApiError(502, sentence(f"The policy model returned an invalid Reasoning State: {e}"),
                        "policy_output_invalid")
    if isinstance(e, ConcurrentModification):
        return ApiError(409, sentence(f"This user's memory was changed by a concurrent request; nothing was written, "
                                      f"retry: {e}"), "concurrent_modification")
    if isinstance(e, StoreError):
        if cypher:
            # the caller's own query failed in the engine (syntax, unknown function, types): their input
            log.info("user cypher failed: %s", e)
            return ApiError(400, f"The Cypher query could not be run ({_cypher_failure(e)}); check its syntax and the "
                            "functions it uses.", "cypher_invalid")
        conflict = id_conflict(e)
        if conflict is not None:
            return conflict
        log.error("store error on %s: %s", where, e)
        return ApiError(503, "The memory store failed on this request; nothing was changed. Retry later.", "store_error")
    if isinstance(e, RuntimeError):
        return id_conflict(e)  # the embedded engine raises a bare RuntimeError on a duplicate id; else a crash
    if isinstance(e, ValidationError):
        return ApiError(422, sentence(f"Invalid value: {e.errors()[0].get('msg')}"), "validation_error")
    if isinstance(e, OverflowError):
        # a date (or number) the request carried is past what date arithmetic can hold; the request
        # models bound dates (graph.models.Instant), this catches a path that does not use them
        log.info("overflow on %s: %s", where, e)
        return ApiError(400, f"A date or number in the request is out of range; dates must lie between the years "
                        f"{MIN_YEAR} and {MAX_YEAR}.", "out_of_range")
    driver_error = _neo4j_driver_error()
    if driver_error is not None and isinstance(e, driver_error):
        # ServiceUnavailable, SessionExpired, auth failures: the database is not there for us
        log.error("neo4j unavailable on %s: %s", where, e)
        return ApiError(503, "The memory store (Neo4j) cannot be reached; nothing was changed. Retry later, or ask the "
                        "operator to check the database.", "store_unavailable")
    return None


def install_api_error_handlers(app: Any) -> None:
    """The domain errors of graph/, llmclients/ and policy/ as HTTP answers (on top of
    openai_wire.install_error_handlers, which covers ApiError, validation, 404/405 and crashes)."""

    async def _handle(request: Request, e: Exception) -> JSONResponse:
        a = domain_error(e, cypher=_is_cypher_route(request), where=f"{request.method} {request.url.path}")
        if a is None:
            raise e  # the crash handler: 500 with an incident id, details in the log
        return _err(a.status, a.message, a.code or "server_error", a.param)

    for exc in (UnknownUser, EditRejected, CypherRefused, ReadOnlyViolation, ChatError, ContextTooLong,
                StateParseError, ConcurrentModification, StoreError, RuntimeError, ValidationError, OverflowError):
        app.add_exception_handler(exc, _handle)
    driver_error = _neo4j_driver_error()
    if driver_error is not None:
        app.add_exception_handler(driver_error, _handle)
