"""A memory item from another memory system (mem0, a plain RAG, ...), as policy/transfer.py takes it.
A module of its own so the HTTP client (evomem/client.py) can send items without importing induction."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ExternalItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=20_000, description="The memory item's text.")
    at: datetime | None = Field(default=None, description="When it was observed or said, if known.")
    holder: str = Field(default="user", min_length=1, max_length=100, description="Who said it (turn speaker).")
    id: str | None = Field(default=None, max_length=200, description="The item's id in the other system.")
