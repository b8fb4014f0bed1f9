"""Build a chat client from its endpoint config (kept apart from config.py, which the clients import).

Every chat model is built here: from a config (``make_chat_model``) or from a command line's server flags
(``chat_model_at``: a URL names an OpenAI-compatible server, none means the given default endpoint).
"""

from __future__ import annotations

from llmclients.chat import ChatModel
from llmclients.config import ModelEndpointConfig


def make_chat_model(cfg: ModelEndpointConfig) -> ChatModel:
    """Build the client for ``cfg``. Local engines load their weights here (seconds), clients connect lazily."""
    if cfg.policy_kind != "model":
        raise ValueError(f"policy_kind {cfg.policy_kind!r} is a policy, not a chat model; build it with "
                         "serving.pipeline.make_policy")
    if cfg.connection == "openai":
        from llmclients.openai_client import OpenAIChatClient

        return OpenAIChatClient(cfg)
    from llmclients.local_engine import LocalChatEngine

    return LocalChatEngine.from_config(cfg)


def endpoint_at(url: str | None, model: str | None = None, timeout_s: float | None = None,
                default: ModelEndpointConfig | None = None) -> ModelEndpointConfig:
    """The endpoint a command's ``--…-url`` / ``--…-model`` flags name: the OpenAI-compatible server at ``url``
    (``model`` its served name, default ``"default"``), else ``default`` (SmolLM2 in process when None).

    >>> endpoint_at("http://127.0.0.1:8000/v1", "judge", 30.0).model_dump(include={"connection", "model", "timeout_s"})
    {'connection': 'openai', 'model': 'judge', 'timeout_s': 30.0}
    >>> endpoint_at(None).connection
    'local'
    """
    if not url:
        return default or ModelEndpointConfig()
    extra = {} if timeout_s is None else {"timeout_s": timeout_s}
    return ModelEndpointConfig(connection="openai", base_url=url, model=model or "default", **extra)


def chat_model_at(url: str | None, model: str | None = None, timeout_s: float | None = None,
                  default: ModelEndpointConfig | None = None) -> ChatModel:
    """``make_chat_model(endpoint_at(...))``: the chat model a command's server flags name."""
    return make_chat_model(endpoint_at(url, model, timeout_s, default))
