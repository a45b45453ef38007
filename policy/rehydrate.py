"""Exact slices of raw artifact payloads, addressed by :class:`Locator`.

Rehydration is the only way raw bytes reach a model. A slice is exact: rows of
a CSV keep their header and original text, JSON pointers return the value as
canonical JSON, and anything cut for the byte budget says so explicitly.
"""

from __future__ import annotations

import csv
import io
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
        if locator.kind == "rows":
            records = _csv_records(text)
            header = [line for _, line in records[:1]]
            body = [line for row, line in records[1:] if row]
        else:
            header, body = [], text.splitlines()
        # 0 is a bad index, not "unset": only None takes the default.
        start = 1 if locator.start is None else locator.start
        end = len(body) if locator.end is None else locator.end
        if start < 1 or end < start or start > len(body):
            raise DerivationError(f"{locator.kind} {start}-{end} outside payload of {len(body)} {locator.kind}")
        return "\n".join(header + body[start - 1 : end])
    if locator.kind == "json_pointer":
        return canonical_json(_resolve_pointer(text, locator.pointer or ""))
    raise DerivationError(f"unknown locator kind {locator.kind!r}")


def _csv_records(text: str) -> list[tuple[list[str], str]]:
    """Each CSV record with its original text; a quoted field may span lines.

    Numbered like the deriver counts rows: blank records are not data rows.
    """
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.reader(lines)
    records: list[tuple[list[str], str]] = []
    start = 0
    try:
        for row in reader:
            records.append((row, "".join(lines[start : reader.line_num]).rstrip("\r\n")))
            start = reader.line_num
    except csv.Error as exc:
        raise DerivationError(f"payload is not CSV: {exc}") from exc
    return records


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
