"""The model-provider contract: an assembled context in, an answer or tool calls out.

A participant's model is named by a spec ``"<provider>:<model>"``
(``scripted:analyst``). :func:`provider_for` turns a spec into a provider and
the model name to ask it for. Only the offline ``scripted`` provider exists
so far; real providers are a separate issue.

Tool calls in a :class:`ModelResponse` carry canonical tool names
(``workspace.read_csv``). A provider that offers tools over the OpenAI wire
format gets wire names back (``workspace__read_csv``) and maps them with
:func:`activities.tools.registry.canonical_name` before returning.

Exceptions::

    ProviderError            the model call failed
    └── UnknownModelError    a malformed spec, an unknown provider or model (permanent)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from policy.records import ChatMessage, ToolCallRequest


class ProviderError(Exception):
    """A model call failed."""

    retryable: bool = False
    """Whether calling again may succeed (a rate limit, a timeout); read by
    :func:`activities.errors.is_retryable`."""


class UnknownModelError(ProviderError):
    """The model spec is malformed, or names a provider or model that does not exist."""


class ModelRequest(BaseModel):
    """One generation: the assembled context and the tools on offer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    """The ModelRun id; a provider that invents call ids derives them from it (stable across retries)."""
    model: str
    """The model name within the provider (``analyst`` for ``scripted:analyst``)."""
    participant_name: str
    """Who is speaking (``Analyst``); discussions label turns with it."""
    messages: tuple[ChatMessage, ...]
    """The assembled context: the runtime system message first, then the transcript window."""
    tools: tuple[dict, ...] = ()
    """OpenAI tool schemas from :meth:`activities.tools.registry.ToolRegistry.schemas`."""


class ModelResponse(BaseModel):
    """What the model produced: text, tool calls, or both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    """Assistant text (``""`` when the model only calls tools)."""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    """Tool calls, under canonical tool names; call ids are unique within the response."""
    usage_prompt_tokens: int | None = None
    """Prompt tokens as the provider billed them, when it reports them."""


class ModelProvider(Protocol):
    """Anything that can answer a :class:`ModelRequest`."""

    name: str
    """The provider part of a model spec (``scripted``)."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request.

        Raises:
            UnknownModelError: the provider has no such model.
            ProviderError: the call failed.
        """
        ...


ProviderFactory = Callable[[str], "tuple[ModelProvider, str]"]
"""``"scripted:analyst"`` -> (provider, model name): how the model-call activity finds a provider."""


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split ``"<provider>:<model>"``.

    Args:
        spec: e.g. ``"scripted:analyst"``.

    Returns:
        ``("scripted", "analyst")``.

    Raises:
        UnknownModelError: no colon, an empty part, or whitespace in either part.
    """
    provider, sep, model = spec.partition(":")
    if not sep or not provider or not model or any(ch.isspace() for ch in spec):
        raise UnknownModelError(f"bad model spec {spec!r}: expected '<provider>:<model>', e.g. 'scripted:analyst'")
    return provider, model


def provider_for(spec: str) -> tuple[ModelProvider, str]:
    """The provider for a model spec, and the model name to ask it for.

    Args:
        spec: ``"<provider>:<model>"``.

    Returns:
        ``(provider, model)``.

    Raises:
        UnknownModelError: a malformed spec, a provider other than ``scripted``,
            or a script that does not exist.
    """
    provider, model = parse_model_spec(spec)
    if provider != "scripted":
        raise UnknownModelError(
            f"unknown model provider {provider!r} in {spec!r}: only 'scripted' is available; "
            "real providers are a separate issue"
        )
    # Imported here: the scripted provider imports this module for the contract.
    from activities.providers.scripted import ScriptedProvider

    scripted = ScriptedProvider()
    scripted.check_model(model)
    return scripted, model


__all__ = [
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ProviderError",
    "ProviderFactory",
    "UnknownModelError",
    "parse_model_spec",
    "provider_for",
]
