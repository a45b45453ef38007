"""Exact slices of raw artifact payloads, addressed by :class:`Locator`.

Rehydration is the only way raw bytes reach a model. A slice is exact: rows of
a CSV keep their header and original text, JSON pointers return the value as
canonical JSON, and anything cut for the byte budget says so explicitly.
"""

from __future__ import annotations

import json

from policy.errors import DerivationError
from policy.records import Locator, canonical_json


def decode_payload(raw: bytes) -> str:
    """Raw bytes as text; undecodable bytes become U+FFFD rather than vanish."""
    return raw.decode("utf-8", errors="replace")


def slice_payload(raw: bytes, locator: Locator | None) -> str:
    """The exact part of ``raw`` that ``locator`` addresses.

    Args:
        raw: the artifact's captured bytes.
        locator: what to take; ``None`` or ``kind="whole"`` takes everything.

    Returns:
        The addressed text.

    Raises:
        DerivationError: the locator does not fit the payload (rows past the
            end, a pointer to a missing key, JSON that does not parse).
    """
    text = decode_payload(raw)
    if locator is None or locator.kind == "whole":
        return text
    if locator.kind in ("rows", "lines"):
        lines = text.splitlines()
        header, body = (lines[:1], lines[1:]) if locator.kind == "rows" else ([], lines)
        start = locator.start or 1
        end = locator.end or len(body)
        if start < 1 or end < start or start > len(body):
            raise DerivationError(f"{locator.kind} {start}-{end} outside payload of {len(body)} {locator.kind}")
        return "\n".join(header + body[start - 1 : end])
    if locator.kind == "json_pointer":
        return canonical_json(_resolve_pointer(text, locator.pointer or ""))
    raise DerivationError(f"unknown locator kind {locator.kind!r}")


def _resolve_pointer(text: str, pointer: str) -> object:
    try:
        node: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DerivationError(f"payload is not JSON: {exc}") from exc
    if pointer in ("", "/"):
        return node
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise DerivationError(f"JSON pointer {pointer!r} does not resolve")
    return node


def bounded(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, with an explicit marker."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    kept = data[:max_bytes].decode("utf-8", errors="ignore")
    return f"{kept}\n[truncated: {max_bytes} of {len(data)} bytes shown]"


def describe(locator: Locator | None) -> str:
    """A short human form of a locator (``rows 3-5``, ``/items/0``, ``whole``)."""
    if locator is None or locator.kind == "whole":
        return "whole"
    if locator.kind == "json_pointer":
        return locator.pointer or "/"
    return f"{locator.kind} {locator.start}-{locator.end}"
