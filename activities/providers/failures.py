"""A provider's HTTP failure, sorted once into Dossier's provider errors.

Both SDKs raise their own exception per status; the providers catch them at
the call and hand status, body and headers to :func:`status_failure`, so
OpenAI, an OpenAI-compatible server and Anthropic are sorted by one rule:

* 429 is :class:`~activities.providers.base.RateLimitedError`, retried after
  the ``Retry-After`` (or ``retry-after-ms``) the provider sent; an exhausted
  quota (OpenAI ``insufficient_quota``) is permanent instead, since waiting
  does not refill it;
* 408, 409, 5xx and Anthropic's 529 (overloaded) are
  :class:`~activities.providers.base.ProviderUnavailableError` (retried);
* a context over the model's window (OpenAI ``context_length_exceeded``,
  llama.cpp ``exceed_context_size_error``, Anthropic "prompt is too long", a
  413, or a 4xx whose message says so) is
  :class:`~activities.providers.base.ContextTooLongError`;
* every other status (400, 401, 403, 404, 422...) is
  :class:`~activities.providers.base.ProviderRequestError`, permanent, with a
  message naming the provider, the model and the status.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

from activities.providers.base import (
    ContextTooLongError,
    ProviderError,
    ProviderRequestError,
    ProviderUnavailableError,
    RateLimitedError,
)

MAX_RETRY_AFTER_SECONDS = 1800.0
"""Longest wait a ``Retry-After`` may ask for; a longer (or absurd) one is capped here."""

MESSAGE_CHARS = 600
"""How much of the provider's own error message an error keeps."""

STATUS_NAMES = {
    400: "bad request", 401: "authentication failed", 403: "permission denied", 404: "not found",
    408: "request timeout", 409: "conflict", 413: "request too large", 422: "unprocessable request",
    429: "rate limited", 500: "server error", 502: "bad gateway", 503: "service unavailable",
    504: "gateway timeout", 529: "overloaded",
}

_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"})
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window|size)|prompt is too long|too many tokens|maximum context|exceeds? the "
    r"(available )?context|reduce the length of the messages", re.IGNORECASE)
_LIMIT = re.compile(r"maximum context length is (\d+)|(?:>|exceeds?) (\d+) (?:tokens? )?maximum|context "
                    r"(?:size|window) (?:is|of) (\d+)", re.IGNORECASE)
_PROMPT = re.compile(r"(?:resulted in|requested|prompt is too long:) (\d+) tokens?|(\d+) tokens? >",
                     re.IGNORECASE)


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date.

    Args:
        headers: the response headers (case-insensitive, as both SDKs give them).
        now: the current Unix time, for an HTTP-date value (default: the clock).

    Returns:
        Seconds, between 0 and :data:`MAX_RETRY_AFTER_SECONDS`; ``None`` when absent or unreadable.
    """
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            if divisor != 1.0:
                continue
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - (time.time() if now is None else now)
        if seconds != seconds:  # NaN
            continue
        return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
    return None


def provider_message(body: object, fallback: str) -> str:
    """The provider's own error text out of an error body (OpenAI's ``error`` object or Anthropic's envelope)."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        return body
    return fallback


def _fields(body: object) -> Mapping[str, Any]:
    """The error object's fields: OpenAI's SDK already unwraps ``error``; Anthropic's envelope keeps it."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        return inner if isinstance(inner, Mapping) else body
    return {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_sizes(message: str, body: object) -> tuple[int | None, int | None]:
    """``(window, prompt)`` in the provider's tokens, where its error states them.

    llama.cpp sends ``n_ctx`` and ``n_prompt_tokens``; OpenAI, vLLM and Anthropic
    say them in prose ("maximum context length is 8192 tokens. However, your
    messages resulted in 9000 tokens"; "prompt is too long: 210000 tokens > 200000 maximum").
    """
    fields = _fields(body)
    limit, prompt = _int(fields.get("n_ctx")), _int(fields.get("n_prompt_tokens"))
    if limit is None and (match := _LIMIT.search(message)):
        limit = int(next(group for group in match.groups() if group))
    if prompt is None and (match := _PROMPT.search(message)):
        prompt = int(next(group for group in match.groups() if group))
    return limit, prompt


def is_context_too_long(status: int, message: str, body: object) -> bool:
    """Whether a 4xx says the context is over the model's window."""
    if status == 413:
        return True
    if not 400 <= status < 500 or status == 429:
        return False
    fields = _fields(body)
    codes = {str(fields.get(key)) for key in ("code", "type") if fields.get(key) is not None}
    return bool(codes & _CONTEXT_CODES) or bool(_CONTEXT_WORDS.search(message))


def status_failure(provider: str, model: str, status: int, body: object, headers: Mapping[str, str] | None,
                   fallback: str = "") -> ProviderError:
    """The Dossier error for an HTTP error response of a provider.

    Args:
        provider: ``openai``, ``local`` or ``anthropic``: named in the message.
        model: the model asked for: named in the message.
        body: the decoded error body (the SDK's ``error.body``).
        headers: the response headers (for ``Retry-After``).
        fallback: the SDK's own message, used when the body carries none.

    Returns:
        The error to raise (see the module docstring for the sorting).
    """
    message = provider_message(body, fallback or "no message")[:MESSAGE_CHARS]
    where = f"{provider} model {model!r}: HTTP {status} ({STATUS_NAMES.get(status, 'error')})"
    if is_context_too_long(status, message, body):
        limit, prompt = context_sizes(message, body)
        return ContextTooLongError(f"{where}: the context is too long for the model: {message}", status=status,
                                   limit_tokens=limit, prompt_tokens=prompt)
    if status == 429:
        if str(_fields(body).get("code")) == "insufficient_quota":
            return ProviderRequestError(f"{where}: the account's quota is exhausted: {message}", status=status)
        return RateLimitedError(f"{where}: {message}", status=status, retry_after=retry_after_seconds(headers))
    if status in (408, 409) or status >= 500:
        return ProviderUnavailableError(f"{where}: {message}", status=status, retry_after=retry_after_seconds(headers))
    return ProviderRequestError(f"{where}: {message}", status=status)


__all__ = [
    "MAX_RETRY_AFTER_SECONDS",
    "context_sizes",
    "is_context_too_long",
    "provider_message",
    "retry_after_seconds",
    "status_failure",
]
