"""Input checks: what every client method runs on its arguments before it writes anything."""

from __future__ import annotations

import uuid

from dossier.client.errors import InvalidInputError


def check_text(text: str, what: str = "message", *, max_bytes: int) -> str:
    """Refuse text the graph cannot hold or a turn cannot use, before anything is written.

    Args:
        what: what it is, for the error message (``message``, ``answer``...).
        max_bytes: the largest size accepted, in UTF-8 bytes.

    Returns:
        ``text``, unchanged.

    Raises:
        InvalidInputError: not a string; a lone surrogate (what undecodable bytes
            in argv become); a NUL character; empty or blank; over ``max_bytes``.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"the {what} must be text, not {type(text).__name__}")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise InvalidInputError(f"the {what} is not valid UTF-8 text (a bad byte at character {error.start})") from None
    if "\x00" in text:
        raise InvalidInputError(f"the {what} contains a NUL byte (at character {text.index(chr(0))})")
    if not text.strip():
        raise InvalidInputError(f"the {what} is empty or blank")
    if size > max_bytes:
        raise InvalidInputError(f"the {what} is {size:,} bytes, over the limit of {max_bytes:,} (MESSAGE_MAX_BYTES)")
    return text


def check_id(value: str | None, what: str) -> str | None:
    """An id in its canonical form, or ``None`` for ``None``.

    Args:
        value: the id as given.
        what: what it names, for the error message (``conversation``, ``branch``...).

    Raises:
        InvalidInputError: not a UUID.
    """
    if value is None:
        return None
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        shown = repr(value) if len(str(value)) <= 60 else repr(str(value)[:60]) + "..."
        raise InvalidInputError(f"{shown} is not a valid id (a {what} id is a UUID)") from None


def check_record_ref(value: str) -> str:
    """A record as why-not takes it: a bare id, or ``<kind>:<id>`` as explain and the decisions name records.

    Returns:
        The id in canonical form, behind its kind when it had one.

    Raises:
        InvalidInputError: the id part is not a UUID.
    """
    kind, _, bare = value.rpartition(":")
    record_id = check_id(bare, "record")
    return f"{kind}:{record_id}" if kind else str(record_id)


__all__ = ["check_id", "check_record_ref", "check_text"]
