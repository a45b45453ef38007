"""Anthropic's Messages API, through the official ``anthropic`` SDK (``anthropic:MODEL``).

Assemblies are stored in OpenAI's format; :func:`to_anthropic` converts one
request the way both APIs' rules line up (the rules
:mod:`policy.validate` checks every assembly against):

* the leading system messages become the ``system`` text blocks;
* an assistant message becomes its text (when it has any) and one
  ``tool_use`` block per call;
* tool messages become ``tool_result`` blocks in a user turn, right after the
  assistant turn that called them; a note that follows them joins that turn,
  after the results;
* consecutive messages of one role merge into one turn (the API wants turns
  to alternate);
* a ``cache_control: {"type": "ephemeral"}`` breakpoint goes on the last block
  of each message the assembly recorded a cache breakpoint after (its
  ``epoch.cache_breakpoints``: the system prompt, the end of the epoch's
  prefix, the last message), so consecutive calls of one epoch read their
  shared prefix from Anthropic's cache; with ``"ttl": "1h"`` when the assembly
  asked for the 1-hour tier (its ``epoch.cache_ttl_seconds``);
* tool schemas become ``{"name", "description", "input_schema"}``.

As for OpenAI, the SDK's retries are off and its exceptions become Dossier's
provider errors here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import anthropic

from activities.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderUnavailableError,
    ProviderUsage,
    settled_call_ids,
)
from activities.providers.config import ANTHROPIC_MAX_OUTPUT_TOKENS, EndpointConfig
from activities.providers.failures import status_failure
from activities.tools.registry import canonical_name
from policy.enums import MessageRole
from policy.records import ChatMessage, ToolCallRequest

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where ``anthropic:`` goes when no base URL is configured."""

EPHEMERAL = {"type": "ephemeral"}
"""Anthropic's cache breakpoint (the 5-minute cache)."""
ONE_HOUR = 3600
"""Anthropic's longer cache duration, asked for as ``"ttl": "1h"``."""


def cache_control(ttl_seconds: int | None) -> dict[str, str]:
    """The breakpoint for a requested lifetime: the 1-hour tier from an hour on, else the default 5 minutes."""
    return {**EPHEMERAL, "ttl": "1h"} if ttl_seconds is not None and ttl_seconds >= ONE_HOUR else dict(EPHEMERAL)


def anthropic_tools(tools: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tools as Anthropic tools (``parameters`` becomes ``input_schema``)."""
    out = []
    for tool in tools:
        function = tool["function"]
        entry = {"name": function["name"], "input_schema": function.get("parameters") or {"type": "object"}}
        if function.get("description"):
            entry["description"] = function["description"]
        out.append(entry)
    return out


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """One message's content blocks, in the order Anthropic wants them."""
    if message.role is MessageRole.TOOL:
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content or ""}]
    blocks: list[dict[str, Any]] = []
    if message.content and message.content.strip():  # the API refuses empty and blank text blocks
        blocks.append({"type": "text", "text": message.content})
    blocks += [{"type": "tool_use", "id": call.call_id, "name": call.name, "input": dict(call.arguments)}
               for call in message.tool_calls]
    return blocks


def to_anthropic(messages: Sequence[ChatMessage], breakpoints: Iterable[int] = (), ttl_seconds: int | None = None,
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An assembled context as Anthropic's ``system`` blocks and ``messages`` turns.

    Args:
        messages: the assembly, in OpenAI form (a checked list: system messages first, a user turn
            next, every tool result right after its call).
        breakpoints: indexes into ``messages`` after which to cache.
        ttl_seconds: the lifetime the breakpoints ask for (:func:`cache_control`).

    Returns:
        ``(system, turns)``.
    """
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    last_block: dict[int, dict[str, Any]] = {}
    """Message index -> the last block it became: where its breakpoint goes."""
    for index, message in enumerate(messages):
        if message.role is MessageRole.SYSTEM and not turns:
            if message.content and message.content.strip():
                system.append({"type": "text", "text": message.content})
                last_block[index] = system[-1]
            continue
        if message.role is MessageRole.SYSTEM:
            # Never in a checked assembly (policy/validate.py); said as a labelled user turn, not dropped.
            message = ChatMessage(role=MessageRole.USER, content=f"System: {message.content or ''}")
        role = "assistant" if message.role is MessageRole.ASSISTANT else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
        last_block[index] = blocks[-1]
    for index in sorted(set(breakpoints)):
        if index in last_block:
            last_block[index]["cache_control"] = cache_control(ttl_seconds)
    return system, turns


def usage_of(usage: Any) -> ProviderUsage:
    """An Anthropic ``usage`` object in Dossier's four counts (``None`` where it reported nothing)."""
    if usage is None:
        return ProviderUsage()
    return ProviderUsage(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None),
        cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None),
    )


class AnthropicProvider:
    """The ``anthropic`` model provider: the Messages API over one endpoint.

    Args:
        endpoint: where to send requests and which parameters to add.
    """

    name = "anthropic"

    def __init__(self, endpoint: EndpointConfig) -> None:
        self.endpoint = endpoint
        self._client: anthropic.AsyncAnthropic | None = None

    def _sdk(self) -> anthropic.AsyncAnthropic:
        # Built on first use (inside the worker's event loop) and kept: one connection pool per endpoint.
        if self._client is None:
            self._client = anthropic.AsyncAnthropic(
                api_key=self.endpoint.api_key.get_secret_value() if self.endpoint.api_key else "unused",
                base_url=self.endpoint.base_url or ANTHROPIC_BASE_URL, timeout=self.endpoint.timeout_seconds,
                # Temporal owns retries: every attempt is an activity attempt in the workflow's history.
                max_retries=0,
                default_headers=self.endpoint.extra_headers or None,
            )
        return self._client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages request body for ``request`` (without ``extra_body``)."""
        system, turns = to_anthropic(request.messages, request.cache_breakpoints, request.cache_ttl_seconds)
        body: dict[str, Any] = {
            "model": request.model, "messages": turns,
            "max_tokens": self.endpoint.max_output_tokens or ANTHROPIC_MAX_OUTPUT_TOKENS,
        }
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = anthropic_tools(request.tools)
        return body

    def _extra_body(self) -> dict[str, Any] | None:
        # Temperature is not a keyword of every SDK release's create(): it goes in the body instead.
        extra = dict(self.endpoint.extra_body)
        if self.endpoint.temperature is not None:
            extra.setdefault("temperature", self.endpoint.temperature)
        return extra or None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send the assembled context and the tools; return the answer, the tool calls and the usage.

        Raises:
            RateLimitedError: 429 (with the ``Retry-After`` asked for).
            ProviderUnavailableError: a timeout, no connection, 408, 409, 5xx, 529 (overloaded).
            ContextTooLongError: the prompt is too long for the model (or the request too large).
            ProviderRequestError: any other refusal (400, 401, 403, 404...).
        """
        where = f"anthropic model {request.model!r}"
        try:
            message = await self._sdk().messages.create(**self.body(request), extra_body=self._extra_body())
        except anthropic.APIStatusError as error:
            raise status_failure(self.name, request.model, error.status_code, error.body,
                                 error.response.headers, error.message) from error
        except anthropic.APITimeoutError as error:
            raise ProviderUnavailableError(
                f"{where}: no answer within {self.endpoint.timeout_seconds:g} s") from error
        except anthropic.APIConnectionError as error:
            cause = error.__cause__ or error
            raise ProviderUnavailableError(f"{where}: cannot connect: {type(cause).__name__}: {cause}") from error
        texts = [block.text for block in message.content if getattr(block, "type", None) == "text"]
        uses = [block for block in message.content if getattr(block, "type", None) == "tool_use"]
        ids = settled_call_ids(request.run_id, [block.id for block in uses])
        return ModelResponse(
            text="".join(texts),
            tool_calls=tuple(
                ToolCallRequest(call_id=call_id, name=canonical_name(block.name),
                                arguments=block.input if isinstance(block.input, dict) else {})
                for call_id, block in zip(ids, uses, strict=True)
            ),
            usage=usage_of(message.usage),
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool, if one was opened."""
        if self._client is not None:
            await self._client.close()
            self._client = None


__all__ = ["ANTHROPIC_BASE_URL", "AnthropicProvider", "anthropic_tools", "to_anthropic", "usage_of"]
