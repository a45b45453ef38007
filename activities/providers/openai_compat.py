"""OpenAI chat completions, through the official ``openai`` SDK: OpenAI itself or any compatible server.

``openai:MODEL`` calls OpenAI (or the server at ``OPENAI_BASE_URL``);
``local:NAME`` calls the model server on this machine (the embedded llama.cpp
server) at the configured ``local_base_url``. Both speak the same wire format,
which is the format assemblies are stored in already
(:meth:`policy.records.ChatMessage.to_openai`), so the messages go out as
stored and the tools as :meth:`activities.tools.registry.ToolRegistry.schemas`
offers them.

The SDK's own retries are off (``max_retries=0``): Temporal owns retries, so
every attempt is visible in the workflow's history. The SDK's exceptions
become Dossier's provider errors here (:mod:`activities.providers.failures`).
"""

from __future__ import annotations

import json
from typing import Any

import openai

from activities.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderUnavailableError,
    ProviderUsage,
    settled_call_ids,
)
from activities.providers.config import EndpointConfig
from activities.providers.failures import status_failure
from activities.tools.registry import canonical_name
from policy.records import ToolCallRequest

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where ``openai:`` goes when no base URL is configured."""

NO_KEY = "unused"
"""Sent as the key to a server that needs none: the SDK refuses to start without one."""

UNPARSED_ARGUMENTS = "_unparsed_arguments"
"""A tool call whose arguments are not a JSON object keeps them as text under this key: the call is
recorded, and the tool's argument check fails it with an error the model reads on its next call."""


def parse_arguments(raw: object) -> dict[str, Any]:
    """A tool call's arguments as the model sent them: a JSON object, else the raw text under a marker key."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {UNPARSED_ARGUMENTS: str(raw)}


def usage_of(usage: Any, timings: Any = None) -> ProviderUsage:
    """An OpenAI ``usage`` object in Dossier's four counts (``None`` where the server reported nothing).

    llama.cpp's server leaves ``prompt_tokens_details`` out and reports the prompt tokens it
    reused from its cache as ``timings.cache_n`` next to ``usage``; that count is its cache read.
    """
    if usage is None:
        return ProviderUsage()
    details = getattr(usage, "prompt_tokens_details", None)
    cache_read = getattr(details, "cached_tokens", None)
    if cache_read is None and isinstance(timings, dict):
        reused = timings.get("cache_n")
        cache_read = reused if isinstance(reused, int) and not isinstance(reused, bool) and reused >= 0 else None
    return ProviderUsage(
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        cache_read_tokens=cache_read,
        cache_write_tokens=getattr(details, "cache_write_tokens", None),
    )


class OpenAICompatProvider:
    """The ``openai`` and ``local`` model providers: chat completions over one endpoint.

    Args:
        name: ``openai`` or ``local``; named in errors and in the spec.
        endpoint: where to send requests and which parameters to add.
    """

    def __init__(self, name: str, endpoint: EndpointConfig) -> None:
        self.name = name
        self.endpoint = endpoint
        self._client: openai.AsyncOpenAI | None = None

    @property
    def base_url(self) -> str:
        """The endpoint called."""
        return self.endpoint.base_url or OPENAI_BASE_URL

    def _sdk(self) -> openai.AsyncOpenAI:
        # Built on first use (inside the worker's event loop) and kept: one connection pool per endpoint.
        if self._client is None:
            key = self.endpoint.api_key.get_secret_value() if self.endpoint.api_key else NO_KEY
            self._client = openai.AsyncOpenAI(
                api_key=key, base_url=self.base_url, timeout=self.endpoint.timeout_seconds,
                # Temporal owns retries: every attempt is an activity attempt in the workflow's history.
                max_retries=0,
                default_headers=self.endpoint.extra_headers or None,
            )
        return self._client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The chat-completions request body for ``request`` (without ``extra_body``)."""
        body: dict[str, Any] = {"model": request.model, "messages": [m.to_openai() for m in request.messages]}
        if request.tools:
            body["tools"] = [dict(tool) for tool in request.tools]
        if self.endpoint.temperature is not None:
            body["temperature"] = self.endpoint.temperature
        if self.endpoint.max_output_tokens is not None:
            # OpenAI's current name; llama.cpp and older compatible servers read only the original one.
            body["max_completion_tokens" if self.name == "openai" else "max_tokens"] = self.endpoint.max_output_tokens
        return body

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send the assembled context and the tools; return the answer, the tool calls and the usage.

        Raises:
            RateLimitedError: 429 (with the ``Retry-After`` asked for).
            ProviderUnavailableError: a timeout, no connection, 408, 409, 5xx.
            ContextTooLongError: the context is over the model's window.
            ProviderRequestError: any other refusal (400, 401, 403, 404...).
            ProviderError: an answer without a choice.
        """
        where = f"{self.name} model {request.model!r} at {self.base_url}"
        try:
            completion = await self._sdk().chat.completions.create(
                **self.body(request), extra_body=self.endpoint.extra_body or None)
        except openai.APIStatusError as error:
            raise status_failure(self.name, request.model, error.status_code, error.body,
                                 error.response.headers, error.message) from error
        except openai.APITimeoutError as error:
            raise ProviderUnavailableError(
                f"{where}: no answer within {self.endpoint.timeout_seconds:g} s") from error
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            raise ProviderUnavailableError(f"{where}: cannot connect: {type(cause).__name__}: {cause}") from error
        if not getattr(completion, "choices", None):
            # A compatible server overloaded or restarting mid-answer; a new attempt may get a whole one.
            raise ProviderUnavailableError(f"{where}: the answer has no choices")
        message = completion.choices[0].message
        calls = [call for call in message.tool_calls or () if getattr(call, "function", None) is not None]
        if len(calls) != len(message.tool_calls or ()):
            raise ProviderError(f"{where}: the answer calls a tool that is not a function, which Dossier never "
                                "offers")
        ids = settled_call_ids(request.run_id, [call.id for call in calls])
        return ModelResponse(
            # A refusal is the model's answer too: the user reads why nothing was done.
            text=message.content or getattr(message, "refusal", None) or "",
            tool_calls=tuple(
                ToolCallRequest(call_id=call_id, name=canonical_name(call.function.name),
                                arguments=parse_arguments(call.function.arguments))
                for call_id, call in zip(ids, calls, strict=True)
            ),
            usage=usage_of(completion.usage, (completion.model_extra or {}).get("timings")),
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool, if one was opened."""
        if self._client is not None:
            await self._client.close()
            self._client = None


__all__ = ["OPENAI_BASE_URL", "OpenAICompatProvider", "UNPARSED_ARGUMENTS", "parse_arguments", "usage_of"]
