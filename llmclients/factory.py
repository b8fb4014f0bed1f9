"""Build a chat client from its endpoint config (kept apart from config.py, which the clients import)."""

from __future__ import annotations

from llmclients.chat import ChatModel
from llmclients.config import ModelEndpointConfig


def make_chat_model(cfg: ModelEndpointConfig) -> ChatModel:
    """Build the client for ``cfg``. Local engines load their weights here (seconds), clients connect lazily."""
    if cfg.kind == "openai":
        from llmclients.openai_client import OpenAIChatClient

        return OpenAIChatClient(cfg)
    if cfg.kind == "local":
        from llmclients.local_engine import LocalChatEngine

        return LocalChatEngine.from_config(cfg)
    raise ValueError(f"kind {cfg.kind!r} is a policy, not a chat model; build it with serving.pipeline.make_policy")
