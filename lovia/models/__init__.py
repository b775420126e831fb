"""Models: the protocol, the scripted test model, the offline demo and OpenAI-compatible.

Model strings: ``demo`` (offline, the default), ``openai:NAME`` (OpenAI, or any compatible
server given a base URL), ``ollama:NAME`` (a local Ollama, ``http://127.0.0.1:11434/v1``
unless ``OLLAMA_HOST`` or a base URL says otherwise).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from lovia.errors import UserError
from lovia.models.base import (
    DEFAULT_MODEL_TIMEOUT,
    FinishChunk,
    Model,
    ModelChunk,
    ModelRequest,
    RetryChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from lovia.models.demo import DemoModel
from lovia.models.scripted import ScriptedCall, ScriptedModel, ScriptedTurn, call

__all__ = [
    "DEFAULT_MODEL_TIMEOUT",
    "URL_PROVIDERS",
    "DemoModel",
    "FinishChunk",
    "Model",
    "ModelChunk",
    "ModelRequest",
    "OpenAIChatModel",
    "RetryChunk",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextChunk",
    "ToolCallChunk",
    "UsageChunk",
    "call",
    "check_base_url",
    "default_model_spec",
    "resolve_model",
]

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434/v1"
URL_PROVIDERS = ("openai", "ollama")
"""The providers in a model spec that talk to a server at a base URL."""


def __getattr__(name: str):
    # The openai client takes longer to import than the rest of lovia together: only a
    # remote model needs it, so the offline default starts without it.
    if name == "OpenAIChatModel":
        from lovia.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_model_spec() -> str:
    """The model an agent without one uses: ``LOVIA_MODEL``, else the offline ``demo``."""
    return os.environ.get("LOVIA_MODEL", "").strip() or "demo"


def _ollama_url() -> str:
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return OLLAMA_DEFAULT_URL
    if "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


def check_base_url(base_url: str) -> None:
    """Refuse a base URL that is not an ``http://`` or ``https://`` address with a host, at once.

    Such a URL was taken, and every request then failed. The message does not quote it: a
    base URL may carry a user and password.
    """
    parts = urlsplit(base_url)  # as given: a space around it reaches the client too
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError("the base URL is not an http:// or https:// address with a host: give one such as "
                        "http://127.0.0.1:8080/v1")


def resolve_model(spec: str | Model | None = None, *, base_url: str | None = None,
                  api_key: str | None = None, timeout: float = DEFAULT_MODEL_TIMEOUT) -> Model:
    """The model named by ``spec`` (see the module docstring); ``None`` means the default.

    ``base_url`` falls back to ``LOVIA_BASE_URL``; the key to ``LOVIA_API_KEY``, then
    ``OPENAI_API_KEY``. ``timeout`` is how many seconds a server may send nothing before a
    request fails. Raises :class:`UserError` for a string it cannot read.
    """
    if spec is not None and not isinstance(spec, str):
        return spec
    text = (spec or default_model_spec()).strip()
    base_url = base_url or os.environ.get("LOVIA_BASE_URL") or None
    if text == "demo":
        return DemoModel()
    provider, _, name = text.partition(":")
    if not name:
        raise UserError(
            f"cannot read model {text!r}: use demo, openai:NAME (e.g. openai:gpt-4.1-mini) or ollama:NAME "
            "(e.g. ollama:qwen2.5)"
        )
    from lovia.models.openai_chat import OpenAIChatModel

    if base_url is not None and provider in URL_PROVIDERS:
        check_base_url(base_url)
    if provider == "openai":
        # Where the key came from, or, with none set, the variables that can give one.
        source = "the api_key given" if api_key else "LOVIA_API_KEY" if os.environ.get("LOVIA_API_KEY") \
            else "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else "LOVIA_API_KEY or OPENAI_API_KEY"
        key = api_key or os.environ.get("LOVIA_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return OpenAIChatModel(name, base_url=base_url, api_key=key, api_key_source=source, label=text,
                               timeout=timeout)
    if provider == "ollama":
        # Ollama needs no key: without one the model sends a placeholder, which is no secret to hide.
        return OpenAIChatModel(name, base_url=base_url or _ollama_url(), api_key=api_key,
                               api_key_source="LOVIA_API_KEY", label=text, timeout=timeout)
    raise UserError(f"unknown model provider {provider!r} in {text!r}: use demo, openai:NAME or ollama:NAME")
