"""The model-provider contract: an assembled context in, an answer or tool calls out.

A participant's model is named by a spec ``"<provider>:<model>"``
(``scripted:analyst``, ``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``,
``local:qwen2.5-coder-1.5b``). A :data:`ProviderFactory` turns a spec into a
provider and the model name to ask it for; the one the worker uses is the
:class:`activities.providers.factory.ModelProviders` that the composition root
(`dossier.runtime`) configures with the installation's endpoints.

Tool calls in a :class:`ModelResponse` carry canonical tool names
(``workspace.read_csv``). A provider that offers tools over the OpenAI wire
format gets wire names back (``workspace__read_csv``) and maps them with
:func:`activities.tools.registry.canonical_name` before returning.

Failures are sorted once, where the SDK's exception is caught
(:mod:`activities.providers.failures`), into::

    ProviderError                  the model call failed (permanent unless a subclass says otherwise)
    ├── UnknownModelError          a malformed spec, an unknown provider or model, an unconfigured endpoint
    ├── ProviderRequestError       the provider refused the request: 400, 401, 403, 404... (permanent)
    │   └── ContextTooLongError    the context is over the model's window (permanent; re-assemble smaller)
    └── ProviderUnavailableError   a timeout, a lost connection, a 5xx or an overload (retryable)
        └── RateLimitedError       429; ``retry_after`` is the wait the provider asked for

:func:`activities.errors.sorted_failures` reads ``retryable`` and
``retry_after`` off them: Temporal owns every retry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from policy.records import ChatMessage, ToolCallRequest


class ProviderError(Exception):
    """A model call failed."""

    retryable: bool = False
    """Whether calling again may succeed (a rate limit, a timeout); read by
    :func:`activities.errors.is_retryable`."""


class UnknownModelError(ProviderError):
    """The model spec is malformed, or names a provider, model or endpoint that does not exist."""


class ProviderRequestError(ProviderError):
    """The provider refused the request as given (bad request, authentication, permission, unknown model).

    Another attempt sends the same request and meets the same refusal, so it is permanent.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status the provider answered with, when there was one."""


class ContextTooLongError(ProviderRequestError):
    """The assembled context does not fit the model's context window.

    Permanent for this assembly; the turn workflow re-assembles once within a
    smaller token budget (see :func:`policy.budget.reduced_budget`).
    """

    def __init__(self, message: str, *, status: int | None = None, limit_tokens: int | None = None,
                 prompt_tokens: int | None = None) -> None:
        super().__init__(message, status=status)
        self.limit_tokens = limit_tokens
        """The model's window as the provider stated it, in its own tokens (``None``: not stated)."""
        self.prompt_tokens = prompt_tokens
        """The request's size as the provider counted it, in its own tokens (``None``: not stated)."""


class ProviderUnavailableError(ProviderError):
    """The provider could not answer now: a timeout, a lost connection, a 5xx or an overload."""

    retryable = True

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status, when the provider answered at all."""
        self.retry_after = retry_after
        """Seconds the provider asked us to wait before the next attempt (``Retry-After``), if it said."""


class RateLimitedError(ProviderUnavailableError):
    """The provider rate-limited the call (429); the next attempt waits ``retry_after`` when given."""


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
    cache_breakpoints: tuple[int, ...] = ()
    """Indexes into ``messages`` after which a provider with explicit prompt caching should cache (the
    assembly's ``epoch.cache_breakpoints``: system prompt, end of the epoch's prefix, last message)."""
    cache_ttl_seconds: int | None = None
    """The cache lifetime the breakpoints ask for (the assembly's ``epoch.cache_ttl_seconds``); ``None``: the
    provider's default."""


class ProviderUsage(BaseModel):
    """Tokens as the provider reported them for one call; ``None`` where it reported nothing.

    Kept as reported, not normalised: OpenAI's ``input_tokens`` (``prompt_tokens``) include the
    cached ones, Anthropic's (``input_tokens``) exclude cache reads and writes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int | None = None
    """Prompt tokens billed (OpenAI ``prompt_tokens``, Anthropic ``input_tokens``)."""
    output_tokens: int | None = None
    """Generated tokens (OpenAI ``completion_tokens``, Anthropic ``output_tokens``)."""
    cache_read_tokens: int | None = None
    """Prompt tokens read from the provider's cache (OpenAI ``prompt_tokens_details.cached_tokens``,
    Anthropic ``cache_read_input_tokens``)."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache (Anthropic ``cache_creation_input_tokens``; OpenAI
    ``prompt_tokens_details.cache_write_tokens`` where reported)."""

    def to_json(self) -> dict[str, int | None]:
        """The four counts under their names, ``None`` included: what a ModelRun's ``usage`` stores."""
        return self.model_dump(mode="json")


class ModelResponse(BaseModel):
    """What the model produced: text, tool calls, or both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    """Assistant text (``""`` when the model only calls tools)."""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    """Tool calls, under canonical tool names; call ids are unique within the response."""
    usage: ProviderUsage = ProviderUsage()
    """Tokens as the provider reported them (all ``None`` for the offline scripted models)."""


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


def derived_call_id(run_id: str, index: int) -> str:
    """The id of the ``index``-th tool call of a run whose provider gave it none: stable across retries."""
    return f"call_{run_id[:8]}_{index}"


def settled_call_ids(run_id: str, ids: Sequence[str | None]) -> list[str]:
    """The provider's tool-call ids, kept; a missing, blank or repeated one replaced by :func:`derived_call_id`.

    Args:
        run_id: the model run (the derived ids are stable across its retries).
        ids: the ids the provider returned, in call order.

    Returns:
        One id per call, unique within the response.
    """
    settled: list[str] = []
    for index, call_id in enumerate(ids):
        if not isinstance(call_id, str) or not call_id.strip() or call_id in settled:
            call_id = derived_call_id(run_id, index)
            while call_id in settled:  # a provider that used our derived form itself
                call_id += "_"
        settled.append(call_id)
    return settled


__all__ = [
    "ContextTooLongError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ProviderError",
    "ProviderFactory",
    "ProviderRequestError",
    "ProviderUnavailableError",
    "ProviderUsage",
    "RateLimitedError",
    "UnknownModelError",
    "derived_call_id",
    "parse_model_spec",
    "settled_call_ids",
]
