"""``evomem_client`` (also importable as ``evomem.client``): the HTTP API (``evomem serve``) for agent code, with
the verbs agent builders know.

    from evomem_client import MemoryClient
    mem = MemoryClient("http://127.0.0.1:8080", api_key="...", user_id="maya")
    mem.add("I moved to Lisbon last spring.")
    hits = mem.search("where do I live?")        # SearchOut: facts with their relational states
    state = mem.state("Suggest a weekend trip")   # StateOut: the Reasoning State

``MemoryClient`` (sync) and ``AsyncMemoryClient`` (async) share every request and answer: add, search,
get_all, get, history, delete (= forget), purge, state, answer, state_external (Reasoning States for
another system's memory items), users, cypher, health. Answers are the server's wire models
(evomem_client/models.py, generated from serving/wire.py by scripts/gen-client-models.py); errors are
exceptions, one class per server error type (the ``type`` of the server's ``{"error": {...}}`` body),
carrying the server's sentence, code and status.

Why the models are generated: one definition of the wire format (the server's, serving/wire.py), and a client
that installs alone (``pip install clients/python``: httpx and pydantic, no web framework, database driver,
numpy or torch; tests/test_light_client.py installs it in a fresh virtual environment).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from evomem_client.models import (AnswerResult, CypherOut, ExternalItem, FactDetail, FactHistoryOut, FactList,
                                  ForgetOut, IngestOut, PurgeOut, SearchOut, StateOut, TransferOut)

M = TypeVar("M", bound=BaseModel)
Messages = str | Sequence[Mapping[str, Any]]

__all__ = ["ERROR_CLASSES", "AsyncMemoryClient", "AuthenticationError", "ConflictError", "EvoMemConnectionError",
           "EvoMemError", "InvalidRequestError", "MemoryClient", "NotConfiguredError", "NotFoundError",
           "PermissionDeniedError", "RateLimitError", "ServerError", "UpstreamError", "UpstreamTimeoutError",
           "error_from_response"]


# -- errors --
class EvoMemError(Exception):
    """An error answer of the server (or, for EvoMemConnectionError, no answer at all)."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None, type: str | None = None,
                 param: str | None = None):
        super().__init__(message)
        self.message, self.status, self.code, self.type, self.param = message, status, code, type, param

    def __str__(self) -> str:
        return f"{self.message} ({self.code}, HTTP {self.status})" if self.status else self.message


class InvalidRequestError(EvoMemError):
    """400/413/422: the request is wrong (bad user id, refused Cypher, invalid session, missing confirm)."""


class AuthenticationError(EvoMemError):
    """401: missing or invalid API key."""


class PermissionDeniedError(EvoMemError):
    """403: the key may not act for this user."""


class NotFoundError(EvoMemError):
    """404: unknown user or fact."""


class ConflictError(EvoMemError):
    """409: already retracted, concurrent change, session or id conflict."""


class RateLimitError(EvoMemError):
    """429: too many Cypher queries in flight for this key."""


class NotConfiguredError(EvoMemError):
    """501: the server does not offer this (e.g. session ingestion)."""


class UpstreamError(EvoMemError):
    """502: a model server (answer model, policy) failed or could not be reached."""


class UpstreamTimeoutError(EvoMemError):
    """504: a model server did not answer in time."""


class ServerError(EvoMemError):
    """500/503 (and any status without a class of its own): the server or its store failed."""


class EvoMemConnectionError(EvoMemError):
    """The server could not be reached (or the connection broke): nothing was answered."""


# The server's error types (serving/openai_wire.py ERROR_TYPES) -> exception class.
ERROR_CLASSES: dict[str, type[EvoMemError]] = {
    "invalid_request_error": InvalidRequestError, "authentication_error": AuthenticationError,
    "permission_error": PermissionDeniedError, "not_found_error": NotFoundError, "conflict_error": ConflictError,
    "rate_limit_error": RateLimitError, "not_implemented_error": NotConfiguredError, "upstream_error": UpstreamError,
    "upstream_timeout": UpstreamTimeoutError, "server_error": ServerError,
}


def error_from_response(r: httpx.Response) -> EvoMemError:
    """The exception for an error answer: its class from the body's ``type``, its text the server's."""
    try:
        err = r.json()["error"]
        message, code, kind, param = str(err["message"]), err.get("code"), err.get("type"), err.get("param")
    except (ValueError, KeyError, TypeError):
        message, code, kind, param = (r.text.strip()[:500] or r.reason_phrase), None, None, None
    cls = ERROR_CLASSES.get(kind or "") or (InvalidRequestError if 400 <= r.status_code < 500 else ServerError)
    return cls(message, r.status_code, code, kind, param)


# -- requests (shared by the sync and async clients) --
class _Call(BaseModel):
    method: str
    path: str
    params: dict[str, Any] = {}
    body: Any = None


def _turns(messages: Messages) -> list[dict[str, Any]]:
    """A string (one user turn) or chat messages ({role, content} as OpenAI/mem0 write them, or {role, text})."""
    if isinstance(messages, str):
        return [{"role": "user", "text": messages}]
    out = []
    for m in messages:
        text = m.get("text", m.get("content"))
        if not isinstance(text, str):
            raise ValueError("every message needs a role and a text (or content) string")
        out.append({"role": m.get("role", "user"), "text": text} | ({"at": str(m["at"])} if m.get("at") else {}))
    return out


def _clean(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class _Calls:
    """Each verb as a request description; the clients send it and parse the answer."""

    def __init__(self, user_id: str | None):
        self.user_id = user_id

    def user(self, user_id: str | None) -> str:
        uid = user_id or self.user_id
        if not uid:
            raise ValueError("no user: pass user_id= or set it on the client")
        return uid

    def add(self, messages: Messages, user_id: str | None, session_id: str | None, started_at: str | None) -> _Call:
        turns = _turns(messages)
        sid = session_id or "client-" + hashlib.sha256(json.dumps(turns, sort_keys=True).encode()).hexdigest()[:16]
        return _Call(method="POST", path=f"/v1/users/{self.user(user_id)}/sessions",
                     body=_clean({"session_id": sid, "started_at": started_at, "turns": turns}))

    def facts(self, user_id: str | None, include: str | Sequence[str] | None, validity: str | None,
              kind: str | None, as_of: str | None, known_at: str | None, limit: int, offset: int) -> _Call:
        inc = include if include is None or isinstance(include, str) else ",".join(include)
        return _Call(method="GET", path=f"/v1/users/{self.user(user_id)}/facts",
                     params=_clean({"include": inc, "validity": validity, "kind": kind, "as_of": as_of,
                                    "known_at": known_at, "limit": limit, "offset": offset}))

    def query(self, verb: str, query: str, user_id: str | None, **extra: Any) -> _Call:
        return _Call(method="POST", path=f"/v1/users/{self.user(user_id)}/{verb}", body=_clean({"query": query} | extra))


class _Base:
    def __init__(self, base_url: str, api_key: str | None, user_id: str | None):
        self.base_url = base_url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("EVOMEM_API_KEY")
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.calls = _Calls(user_id)

    @staticmethod
    def parse(r: httpx.Response, model: type[M]) -> M:
        if r.status_code >= 400:
            raise error_from_response(r)
        return model.model_validate(r.json())

    @staticmethod
    def parse_json(r: httpx.Response) -> Any:
        if r.status_code >= 400:
            raise error_from_response(r)
        return r.json()


def _request_kwargs(c: _Call) -> dict[str, Any]:
    return {"params": c.params or None, "json": c.body} if c.body is not None else {"params": c.params or None}


class MemoryClient(_Base):
    """Synchronous client of ``evomem serve``. ``user_id``: the default user of every verb."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None,
                 user_id: str | None = None, timeout: float = 120.0, http: httpx.Client | None = None):
        super().__init__(base_url, api_key, user_id)
        self.http = http or httpx.Client(timeout=timeout, trust_env=False)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _send(self, c: _Call) -> httpx.Response:
        try:
            return self.http.request(c.method, self.base_url + c.path, headers=self.headers, **_request_kwargs(c))
        except httpx.TransportError as e:
            raise EvoMemConnectionError(f"cannot reach the EvoMemState server at {self.base_url}: {e}") from e

    # -- verbs --
    def add(self, messages: Messages, user_id: str | None = None, session_id: str | None = None,
            started_at: str | None = None) -> IngestOut:
        """Remember a conversation (chat messages) or one thing the user said (a string). Idempotent."""
        return self.parse(self._send(self.calls.add(messages, user_id, session_id, started_at)), IngestOut)

    def search(self, query: str, user_id: str | None = None, k: int | None = None, traverse: bool | None = None,
               relational_states: bool | None = None, budget: int | None = None, as_of: str | None = None,
               known_at: str | None = None) -> SearchOut:
        """Facts for ``query`` with their relational states (as of a valid time / as known at a recorded time)."""
        return self.parse(self._send(self.calls.query("search", query, user_id, k=k, traverse=traverse,
                                                      relational_states=relational_states, budget=budget,
                                                      as_of=as_of, known_at=known_at)), SearchOut)

    def state(self, query: str, user_id: str | None = None, k: int | None = None, as_of: str | None = None,
              known_at: str | None = None) -> StateOut:
        """The Reasoning State for a request."""
        return self.parse(self._send(self.calls.query("state", query, user_id, k=k, as_of=as_of, known_at=known_at)),
                          StateOut)

    def profile(self, user_id: str | None = None, latest: int = 10) -> dict[str, Any]:
        """The profile view (current facts by concept, counts per validity, latest changes) as JSON."""
        return dict(self.parse_json(self._send(_Call(method="GET", path=f"/v1/users/{self.calls.user(user_id)}/profile",
                                                     params={"latest": latest}))))

    def answer(self, query: str, user_id: str | None = None, choices: Sequence[str] | None = None,
               max_tokens: int | None = None) -> AnswerResult:
        return self.parse(self._send(self.calls.query("answer", query, user_id, choices=list(choices) if choices
                                                      else None, max_tokens=max_tokens)), AnswerResult)

    def get_all(self, user_id: str | None = None, include: str | Sequence[str] | None = None,
                validity: str | None = None, kind: str | None = None, as_of: str | None = None,
                known_at: str | None = None, limit: int = 100, offset: int = 0) -> FactList:
        """The user's facts with their states (newest first): current ones unless ``include`` adds others
        (superseded, disputed, expired, retracted, all) or ``validity`` asks for exactly one."""
        return self.parse(self._send(self.calls.facts(user_id, include, validity, kind, as_of, known_at, limit,
                                                      offset)), FactList)

    def get(self, fact_id: str, user_id: str | None = None) -> FactDetail:
        return self.parse(self._send(_Call(method="GET", path=f"/v1/users/{self.calls.user(user_id)}/facts/{fact_id}")),
                          FactDetail)

    def history(self, fact_id: str, user_id: str | None = None) -> FactHistoryOut:
        return self.parse(self._send(_Call(method="GET", path=f"/v1/users/{self.calls.user(user_id)}/facts/"
                                           f"{fact_id}/history")), FactHistoryOut)

    def delete(self, fact_id: str, user_id: str | None = None, reason: str = "") -> ForgetOut:
        """Forget one fact (retract: kept as a tombstone that says never to rely on it)."""
        return self.parse(self._send(_Call(method="POST", path=f"/v1/users/{self.calls.user(user_id)}/facts/"
                                           f"{fact_id}/forget", body={"reason": reason})), ForgetOut)

    forget = delete

    def purge(self, user_id: str | None = None, confirm: bool = False) -> PurgeOut:
        """Delete everything of the user, irreversibly; the server refuses unless ``confirm``."""
        return self.parse(self._send(_Call(method="DELETE", path=f"/v1/users/{self.calls.user(user_id)}",
                                           params={"confirm": "true" if confirm else "false"})), PurgeOut)

    def state_external(self, query: str, items: Sequence[ExternalItem | Mapping[str, Any]]) -> TransferOut:
        """A Reasoning State over memory items from another system (nothing is stored)."""
        body = {"query": query, "items": [ExternalItem.model_validate(i).model_dump(mode="json", exclude_none=True)
                                          for i in items]}
        return self.parse(self._send(_Call(method="POST", path="/v1/state/external", body=body)), TransferOut)

    def cypher(self, query: str, user_id: str | None = None, params: Mapping[str, Any] | None = None) -> CypherOut:
        return self.parse(self._send(_Call(method="POST", path=f"/v1/users/{self.calls.user(user_id)}/cypher",
                                           body={"query": query, "params": dict(params or {})})), CypherOut)

    def users(self) -> list[str]:
        return list(self.parse_json(self._send(_Call(method="GET", path="/v1/users")))["users"])

    def health(self) -> dict[str, Any]:
        return dict(self.parse_json(self._send(_Call(method="GET", path="/health"))))


class AsyncMemoryClient(_Base):
    """The same verbs as ``MemoryClient``, awaitable."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None,
                 user_id: str | None = None, timeout: float = 120.0, http: httpx.AsyncClient | None = None):
        super().__init__(base_url, api_key, user_id)
        self.http = http or httpx.AsyncClient(timeout=timeout, trust_env=False)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _send(self, c: _Call) -> httpx.Response:
        try:
            return await self.http.request(c.method, self.base_url + c.path, headers=self.headers,
                                           **_request_kwargs(c))
        except httpx.TransportError as e:
            raise EvoMemConnectionError(f"cannot reach the EvoMemState server at {self.base_url}: {e}") from e

    async def add(self, messages: Messages, user_id: str | None = None, session_id: str | None = None,
                  started_at: str | None = None) -> IngestOut:
        return self.parse(await self._send(self.calls.add(messages, user_id, session_id, started_at)), IngestOut)

    async def search(self, query: str, user_id: str | None = None, k: int | None = None,
                     traverse: bool | None = None, relational_states: bool | None = None,
                     budget: int | None = None, as_of: str | None = None, known_at: str | None = None) -> SearchOut:
        return self.parse(await self._send(self.calls.query("search", query, user_id, k=k, traverse=traverse,
                                                            relational_states=relational_states, budget=budget,
                                                            as_of=as_of, known_at=known_at)), SearchOut)

    async def state(self, query: str, user_id: str | None = None, k: int | None = None, as_of: str | None = None,
                    known_at: str | None = None) -> StateOut:
        return self.parse(await self._send(self.calls.query("state", query, user_id, k=k, as_of=as_of,
                                                            known_at=known_at)), StateOut)

    async def profile(self, user_id: str | None = None, latest: int = 10) -> dict[str, Any]:
        return dict(self.parse_json(await self._send(_Call(method="GET", path=f"/v1/users/"
                                                           f"{self.calls.user(user_id)}/profile",
                                                           params={"latest": latest}))))

    async def answer(self, query: str, user_id: str | None = None, choices: Sequence[str] | None = None,
                     max_tokens: int | None = None) -> AnswerResult:
        return self.parse(await self._send(self.calls.query("answer", query, user_id, choices=list(choices)
                                                            if choices else None, max_tokens=max_tokens)),
                          AnswerResult)

    async def get_all(self, user_id: str | None = None, include: str | Sequence[str] | None = None,
                      validity: str | None = None, kind: str | None = None, as_of: str | None = None,
                      known_at: str | None = None, limit: int = 100, offset: int = 0) -> FactList:
        return self.parse(await self._send(self.calls.facts(user_id, include, validity, kind, as_of, known_at, limit,
                                                            offset)), FactList)

    async def get(self, fact_id: str, user_id: str | None = None) -> FactDetail:
        return self.parse(await self._send(_Call(method="GET", path=f"/v1/users/{self.calls.user(user_id)}/facts/"
                                                 f"{fact_id}")), FactDetail)

    async def history(self, fact_id: str, user_id: str | None = None) -> FactHistoryOut:
        return self.parse(await self._send(_Call(method="GET", path=f"/v1/users/{self.calls.user(user_id)}/facts/"
                                                 f"{fact_id}/history")), FactHistoryOut)

    async def delete(self, fact_id: str, user_id: str | None = None, reason: str = "") -> ForgetOut:
        return self.parse(await self._send(_Call(method="POST", path=f"/v1/users/{self.calls.user(user_id)}/facts/"
                                                 f"{fact_id}/forget", body={"reason": reason})), ForgetOut)

    forget = delete

    async def purge(self, user_id: str | None = None, confirm: bool = False) -> PurgeOut:
        return self.parse(await self._send(_Call(method="DELETE", path=f"/v1/users/{self.calls.user(user_id)}",
                                                 params={"confirm": "true" if confirm else "false"})), PurgeOut)

    async def state_external(self, query: str, items: Sequence[ExternalItem | Mapping[str, Any]]) -> TransferOut:
        body = {"query": query, "items": [ExternalItem.model_validate(i).model_dump(mode="json", exclude_none=True)
                                          for i in items]}
        return self.parse(await self._send(_Call(method="POST", path="/v1/state/external", body=body)), TransferOut)

    async def cypher(self, query: str, user_id: str | None = None,
                     params: Mapping[str, Any] | None = None) -> CypherOut:
        return self.parse(await self._send(_Call(method="POST", path=f"/v1/users/{self.calls.user(user_id)}/cypher",
                                                 body={"query": query, "params": dict(params or {})})), CypherOut)

    async def users(self) -> list[str]:
        return list(self.parse_json(await self._send(_Call(method="GET", path="/v1/users")))["users"])

    async def health(self) -> dict[str, Any]:
        return dict(self.parse_json(await self._send(_Call(method="GET", path="/health"))))
