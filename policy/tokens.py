"""Token accounting. The counter is injected: the policy never imports tiktoken.

Message tokens follow one convention everywhere in Dossier (and in the shared
trace measurements): the tokens of ``content``, plus the tool-call names and
their JSON arguments, plus a fixed overhead per message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from policy.records import ChatMessage, canonical_json

TokenCounter = Callable[[str], int]
"""Returns the number of tokens in a string (e.g. a tiktoken encoding's ``encode`` length)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Role and separator tokens a chat API adds around each message."""


def count_message(message: ChatMessage, counter: TokenCounter) -> int:
    """Tokens one chat message costs.

    Args:
        counter: the injected token counter.

    Returns:
        Content tokens, plus each tool call's name and canonical JSON
        arguments, plus :data:`MESSAGE_OVERHEAD_TOKENS`.
    """
    total = MESSAGE_OVERHEAD_TOKENS + (counter(message.content) if message.content else 0)
    for call in message.tool_calls:
        total += counter(call.name) + counter(canonical_json(call.arguments))
    return total


def count_messages(messages: Iterable[ChatMessage], counter: TokenCounter) -> int:
    """Sum of :func:`count_message` over ``messages``."""
    return sum(count_message(message, counter) for message in messages)
