"""Errors of the user-Cypher path. All are ValueErrors: the caller's query is at fault, never the store."""

from __future__ import annotations


class CypherRefused(ValueError):
    """The query is outside the per-user read-only subset (or does not parse); the message says why."""


class CypherTimeout(CypherRefused):
    """The query ran past its time budget and was interrupted."""


class CypherFailed(CypherRefused):
    """The query parsed and passed the allowlist but the engine rejected it (types, unknown property)."""
