"""Column types that make every value Dossier holds storable in Postgres.

Postgres cannot store two things Python strings and JSON values can hold:

* U+0000 (NUL) in ``text``/``varchar`` ("invalid byte sequence for encoding
  UTF8: 0x00") or anywhere in ``jsonb`` ("unsupported Unicode escape
  sequence");
* the non-finite numbers ``NaN``, ``Infinity`` and ``-Infinity`` in ``jsonb``
  (Python's :mod:`json` writes them; Postgres refuses the token).

Both reach the store from data nobody controls: a tool result's JSON, a
model's tool-call arguments, an error message, a subagent's report, a
malformed id. Refusing the write would lose the record (a tool result that
cannot be ingested, a turn that cannot save its assembly), so every text, id
and JSON column stores such values in a fixed, visible form instead:

* U+0000 becomes U+FFFD (the replacement character), in strings and object
  keys alike;
* a non-finite number becomes the string JSON-aware tools print for it
  (``"NaN"``, ``"Infinity"``, ``"-Infinity"``).

Nothing exact is lost by this: a tool result's bytes are kept whole in its
artifact (S3), which holds any byte; what Postgres holds is derived from them.
Human input is refused earlier, with a typed error, by the client and CLI
(:class:`dossier.client.InvalidInputError`), so a person's text is never
rewritten. An id
holding U+0000 matches no row (no id contains U+FFFD), so a lookup by it is a
plain :class:`~store.errors.NotFoundError`.

The types apply on the way in only (``process_bind_param``): values read back
are what was stored. They are wired into :class:`store.models.base.Base` for
every ``str``, id and JSON column, so a new column is covered by declaring it.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NUL = "\x00"
REPLACEMENT = "\ufffd"
"""What U+0000 is stored as."""

_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def storable_text(value: str) -> str:
    """``value`` with every U+0000 replaced by U+FFFD (unchanged, and not copied, when it has none)."""
    return value.replace(NUL, REPLACEMENT) if NUL in value else value


def storable_json(value: Any) -> Any:
    """``value`` with U+0000 replaced in every string and key and non-finite numbers spelled as strings.

    Containers are rebuilt only where something changes, so a clean value
    (the common case) is returned as is.
    """
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return _NON_FINITE.get(value, value)
    if isinstance(value, dict):
        clean = {storable_text(k) if isinstance(k, str) else k: storable_json(v) for k, v in value.items()}
        return value if _same(value, clean) else clean
    if isinstance(value, (list, tuple)):
        items = [storable_json(v) for v in value]
        return value if all(a is b for a, b in zip(value, items, strict=True)) else items
    return value


def _same(before: dict[Any, Any], after: dict[Any, Any]) -> bool:
    return len(before) == len(after) and all(
        k in before and before[k] is v for k, v in after.items())


class StoredText(TypeDecorator[str]):
    """``TEXT`` that stores U+0000 as U+FFFD."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return storable_text(value) if isinstance(value, str) else value


class StoredId(TypeDecorator[str]):
    """``VARCHAR(n)`` for ids: U+0000 stored (and looked up) as U+FFFD, so it matches no real id."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return storable_text(value) if isinstance(value, str) else value


class StoredJSON(TypeDecorator[Any]):
    """``JSONB`` that stores U+0000 as U+FFFD and non-finite numbers as strings."""

    impl = JSONB
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return storable_json(value)


__all__ = ["REPLACEMENT", "StoredId", "StoredJSON", "StoredText", "storable_json", "storable_text"]
