"""The common shape of a context strategy: transcript so far in, the messages a model would get out.

Peer strategies (LangChain, OpenAI Agents SDK, Anthropic context editing)
work on the chat transcript itself, so they share this interface. Dossier's
own strategy works on the runtime graph instead and is run by the benchmark
that imported the transcript into the graph; its output is measured with the
same functions.

Messages are OpenAI chat-completions dicts: ``{"role": "system"|"user"|"assistant"|"tool",
"content": str|None, "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": str}}],
"tool_call_id": str, "name": str}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from policy.records import canonical_json
from policy.tokens import MESSAGE_OVERHEAD_TOKENS

OpenAIMessage = dict[str, Any]
TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class CallInput:
    """One model call to build a context for."""

    messages: Sequence[OpenAIMessage]
    """The full transcript strictly before the call (what replay would send)."""
    token_budget: int | None = None
    """A prompt token budget, for strategies that take one."""


class ContextStrategy(Protocol):
    """A way to build a model call's context from the transcript."""

    name: str
    """Short, stable name used as the key in tables and JSON."""
    parameters: dict[str, Any]
    """Every parameter and package version, stated in the output."""

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        """The messages the model would receive for this call."""
        ...


@dataclass(frozen=True)
class FullReplay:
    """The legacy baseline: every message, every raw tool result, as recorded."""

    name: str = "full_replay"
    parameters: dict[str, Any] = field(default_factory=dict)

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        """The whole transcript."""
        return [dict(message) for message in call.messages]


def message_text(message: OpenAIMessage) -> str:
    """Everything a model reads in one message: content and tool-call names and arguments."""
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or ():
        function = call.get("function", call)
        arguments = function.get("arguments", "")
        parts.append(f"{function.get('name', '')} {arguments if isinstance(arguments, str) else json.dumps(arguments)}")
    return "\n".join(part for part in parts if part)


def count_tokens(messages: Sequence[OpenAIMessage], counter: TokenCounter) -> int:
    """Prompt tokens of ``messages``, by the rule of :func:`policy.tokens.count_message`.

    Content tokens, plus each tool call's name and canonical JSON arguments,
    plus 4 tokens per message: so Dossier's and the peers' counts compare.
    """
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + (counter(message["content"]) if message.get("content") else 0)
        total += sum(counter(name) + counter(arguments) for name, arguments in tool_call_texts(message))
    return total


def tool_call_texts(message: OpenAIMessage) -> list[tuple[str, str]]:
    """Each tool call of ``message`` as (name, arguments as canonical JSON, or the raw string if not JSON)."""
    texts: list[tuple[str, str]] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                texts.append((function.get("name", ""), arguments))
                continue
        texts.append((function.get("name", ""), canonical_json(arguments)))
    return texts


def history_tokens(messages: Sequence[OpenAIMessage], counter: TokenCounter) -> int:
    """Prompt tokens minus the leading system prompt (which every strategy sends unchanged)."""
    rest = list(messages[1:]) if messages and messages[0].get("role") == "system" else list(messages)
    return count_tokens(rest, counter) if rest else 0
