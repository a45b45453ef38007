"""Budgeted one-line summaries of structured (JSON) and plain-text tool results.

A summary is what a later model call reads in place of the raw result, so
it has to be small and it must never invent: every value is copied from the
payload. The summariser ranks what a result offers and keeps the best of it
within a character budget:

* fields the tool declares (:attr:`ToolSpec.summary_fields`) come first, in
  the declared order;
* then identifiers (``id``, ``*_id``, ``number``), names and titles, states,
  dates and numbers, links; anything else last;
* free text (long or multi-line strings such as e-mail bodies, snippets,
  descriptions) never enters a summary: it stays in the raw artifact, which
  the memory's locator addresses and rehydration can fetch;
* a list of records is a table: its length, the fields every record shares
  said once, a header of columns (declared fields, else the best six), then
  as many ``|``-separated rows as the budget allows and ``(+N more)``; a map
  of records keyed by id reads the same way; a list of scalars shows as many
  values as fit;
* the default budget grows with the result (:func:`summary_budget`).

Output depends only on the payload, the spec and the budget: no dict-order
surprises (JSON object order is part of the bytes) and no randomness.

The summary's punctuation (:data:`FIELD_SEPARATOR`, :data:`LIST_HEAD_SEPARATOR`,
:data:`LEFT_OUT_ITEMS`, ...) is defined here once: whatever reads summaries
back builds its patterns from these constants.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice
from typing import Any

from policy.records import canonical_json

SUMMARY_CHARS = 280
"""Smallest default character budget of one summary (about 70 tokens of cl100k)."""

SUMMARY_SHARE = 0.5
"""A bigger result gets a budget of this share of its characters ..."""

SUMMARY_MAX_CHARS = 1500
"""... up to this many; beyond that the raw artifact (by locator) is the detail."""


def summary_budget(raw_chars: int) -> int:
    """The default character budget for a result of ``raw_chars`` characters.

    A fixed budget either wastes tokens on small results or drops most of
    a mid-sized record (the ids a later call copies). Half the raw size,
    between :data:`SUMMARY_CHARS` and :data:`SUMMARY_MAX_CHARS`, keeps the
    values of typical records while the table form drops their syntax.
    """
    return max(SUMMARY_CHARS, min(int(raw_chars * SUMMARY_SHARE), SUMMARY_MAX_CHARS))

MAX_VALUE_CHARS = 80
"""A scalar longer than this is clipped with ``…``."""

FREE_TEXT_CHARS = 120
"""A string longer than this, or with a line break, is free text: raw-only."""

ITEM_FIELDS = 3
"""Fields shown per list item (unless the tool declares its own)."""

MAX_ITEMS = 8
"""Items shown per list, at most."""

# The summary's punctuation. The scripted model (activities/providers/scripted/scripts/readings.py)
# reads summaries back with patterns built from these, so a change here is made once.
FIELD_SEPARATOR = "; "
"""Joins the parts of a record's summary: ``total=12; groups: 3 [...] — ...; status=ok``."""
KEY_VALUE_SEPARATOR = "="
"""Between a scalar field's key and its value: ``total=12``."""
LABEL_SEPARATOR = ": "
"""After the label of a list or nested record: ``groups: 3 ...``, ``owner: id=7, name=Ann``."""
PAIR_SEPARATOR = ", "
"""Joins the ``k=v`` pairs of a nested record and of a table's common fields."""
LIST_LABEL = "items"
"""The label of a result that is itself a list (``items: 4 [path|rows] — ...``); the
tool declares its item fields as ``items.<field>`` (or plainly as ``<field>``)."""
COMMON_OPEN = " (all "
"""Opens the fields every record of a table shares, said once: ``items: 3 (all from=Ann) [...]``."""
COMMON_CLOSE = ")"
"""Closes the common fields."""
HEADER_OPEN = " ["
"""Opens a table's header of column names: ``items: 3 [id|name] — ...``."""
HEADER_CLOSE = "]"
"""Closes a table's header."""
CELL_SEPARATOR = "|"
"""Joins the column names of a header and the cells of a row (a ``|`` inside a value reads ``/``)."""
LIST_HEAD_SEPARATOR = " — "
"""Ends a list's head (its length, common fields and header); its items follow."""
ROW_SEPARATOR = FIELD_SEPARATOR
"""Joins a table's rows (the same as :data:`FIELD_SEPARATOR`: a row ends where a field could)."""
LEFT_OUT_OPEN = " (+"
"""Opens the count of what a summary left out: `` (+3 more)``, `` (+2 fields in raw)``."""
LEFT_OUT_CLOSE = ")"
"""Closes the count of what was left out."""
LEFT_OUT_ITEMS = " more"
"""What a list's count of left-out items says: ``a, b (+3 more)``."""
LEFT_OUT_FIELDS = " fields in raw"
"""What a record's count of left-out fields says (they stay in the raw artifact)."""

# Key tiers, best first. A key takes the first tier one of whose patterns it matches.
_TIERS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^(id|key|number|code|sku|ref)$|_(id|number|code|key|ref)$|^(id|number)_"),
    re.compile(r"(^|_)(name|title|subject|filename|path|email|from|to|label|sender)$"),
    re.compile(r"(^|_)(status|state|result|outcome|type|kind|segment|severity|level|error)$"),
    re.compile(r"(^|_)(date|time|at|day|month|year|version|count|total|sum|amount|price|value|pct|percent)$"),
    re.compile(r"(^|_)(url|uri|href|link)$"),
)
_LAST_TIER = len(_TIERS)
# Digests and opaque tokens identify bytes, not meaning: shown only when nothing else is.
_OPAQUE = re.compile(r"(^|_)(sha|sha1|sha256|hash|etag|checksum|digest|token|cursor|signature)$")


def key_tier(key: str) -> int:
    """How useful a field is by its name alone (0 best)."""
    lowered = key.lower()
    if _OPAQUE.search(lowered):
        return _LAST_TIER + 1
    for tier, pattern in enumerate(_TIERS):
        if pattern.search(lowered):
            return tier
    return _LAST_TIER


_PROSE_KEYS = re.compile(r"(^|_)(body|snippet|text|content|html|markdown|description|abstract|excerpt|transcript)$")


def is_free_text(value: Any, key: str = "") -> bool:
    """Prose a summary leaves in the raw artifact.

    Long or multi-line strings, and anything under a prose field name (a
    search snippet, a message body) however short: prose is what a reader
    must not take as a verified fact, and what privacy rules guard.
    """
    if isinstance(value, str) and (len(value) > FREE_TEXT_CHARS or "\n" in value):
        return True
    return bool(key) and _PROSE_KEYS.search(key.lower()) is not None and isinstance(value, str)


def scalar(value: Any) -> str:
    """A scalar as summary text, clipped to :data:`MAX_VALUE_CHARS`."""
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _is_scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, (dict, list))


def _declared(fields: tuple[str, ...], prefix: str) -> list[str]:
    """Declared fields directly under ``prefix`` (``""`` for the top level)."""
    out: list[str] = []
    for path in fields:
        head, _, rest = path.partition(".")
        if prefix == "" and head:
            out.append(head)  # a field, or the container of declared subfields
        elif prefix and head == prefix and rest and "." not in rest:
            out.append(rest)
    return list(dict.fromkeys(out))


def _ranked_keys(record: dict[str, Any], declared: list[str]) -> list[str]:
    """Keys of ``record`` worth showing, best first (declared ones in declared order)."""
    first = [k for k in declared if k in record]
    rest = [k for k in record if k not in first]
    # sorted() is stable: within a tier the payload's own order decides.
    return first + sorted(rest, key=lambda k: _value_tier(k, record[k]))


SHORT_LIST_VALUE_CHARS = 24
"""A list whose items are all scalars at most this long is a list of handles."""


def _value_tier(key: str, value: Any) -> int:
    """A key's tier, raised to names' tier for a list of short scalars.

    ``reservations: [JG7FMM, LQ940Q, ...]`` is cheap to show whole, and its
    items are what a later call asks about, whatever the key is called.
    """
    tier = key_tier(key)
    if (isinstance(value, list) and value and tier > 1
            and all(_is_scalar(v) and len(scalar(v)) <= SHORT_LIST_VALUE_CHARS for v in value)):
        return 1
    return tier


def _common_fields(items: list[Any], declared: list[str]) -> dict[str, Any]:
    """Short scalar fields with one value across every item of a list of two or more records.

    Saying them once (``all from=Ann``) instead of per item keeps the items to
    what tells them apart.
    """
    if len(items) < 2 or not all(isinstance(item, dict) for item in items):
        return {}
    first = items[0]
    return {
        key: value
        for key, value in first.items()
        if key not in declared and _is_scalar(value) and not is_free_text(value, key)
        and key_tier(key) <= _LAST_TIER  # an identical digest in every item says nothing
        and all(item.get(key) == value for item in items[1:])
    }


MAX_COLUMNS = 6
"""Columns a table of records shows, at most (declared fields always)."""


def _columns(items: list[dict[str, Any]], declared: list[str]) -> list[str]:
    """Scalar fields worth a column across a list of records: declared first, then by tier."""
    seen: dict[str, None] = {}
    for item in items:
        for key, value in item.items():
            if _is_scalar(value) and (key in declared or (not is_free_text(value, key) and key_tier(key) <= _LAST_TIER)):
                seen.setdefault(key, None)
    named = [k for k in declared if k in seen]
    if named:
        return named  # the tool said which fields tell its records apart
    return _ranked_keys(dict.fromkeys(seen), declared)[:MAX_COLUMNS]


def _table(label: str, items: list[dict[str, Any]], declared: list[str], room: int) -> str:
    """``label: N (all k=v) [a|b|c] — 1|x|y; 2|z|w (+k more)``: keys once, then one row per record.

    Repeating every key in every record is most of what a JSON list costs;
    a header and ``|``-separated cells keep every value at a fraction of it.
    """
    common = _common_fields(items, declared)
    shared = PAIR_SEPARATOR.join(_pair(k, v) for k, v in common.items())
    rows = [{k: v for k, v in item.items() if k not in common} for item in items]
    columns = _columns(rows, declared)
    head = f"{label}{LABEL_SEPARATOR}{len(items)}" + (f"{COMMON_OPEN}{shared}{COMMON_CLOSE}" if shared else "")
    if not columns:
        return head
    head += f"{HEADER_OPEN}{CELL_SEPARATOR.join(columns)}{HEADER_CLOSE}{LIST_HEAD_SEPARATOR}"
    cells = (CELL_SEPARATOR.join(_cell(row.get(k)) for k in columns) for row in rows)
    return _fit(head, cells, len(rows), ROW_SEPARATOR, room)


def _cell(value: Any) -> str:
    """A table cell: the scalar with :data:`CELL_SEPARATOR` read as ``/``; empty for a missing or nested value."""
    return scalar(value).replace(CELL_SEPARATOR, "/") if _is_scalar(value) else ""


def _pair(key: str, value: Any) -> str:
    """``key=value``: a scalar field as a summary shows it."""
    return f"{key}{KEY_VALUE_SEPARATOR}{scalar(value)}"


def _left_out(count: int, what: str) -> str:
    """`` (+3 more)``: how many items or fields a summary left out."""
    return f"{LEFT_OUT_OPEN}{count}{what}{LEFT_OUT_CLOSE}"


def _fit(head: str, texts: Iterable[str], total: int, sep: str, room: int) -> str:
    """``head`` and as many of ``texts`` as fit in ``room`` chars (at least one), then ``(+k more)``.

    ``total`` is how many items there are; at most ``2 * MAX_ITEMS`` are shown.
    """
    shown: list[str] = []
    for text in islice(texts, MAX_ITEMS * 2):
        more = total - len(shown) - 1
        tail = _left_out(more, LEFT_OUT_ITEMS) if more else ""
        if shown and len(head) + len(sep.join([*shown, text])) + len(tail) > room:
            break
        shown.append(text)
    hidden = total - len(shown)
    return head + sep.join(shown) + (_left_out(hidden, LEFT_OUT_ITEMS) if hidden else "")


def keyed_records(value: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A map of records keyed by id (``{"card_1": {...}, "card_2": {...}}``) as a list of records.

    The key becomes a ``key`` field unless every record already carries it
    as a value (an ``id`` repeating its key).
    """
    if not value or not all(isinstance(v, dict) for v in value.values()):
        return None
    if all(k in (scalar(x) for x in v.values() if _is_scalar(x)) for k, v in value.items()):
        return list(value.values())
    return [{"key": k, **v} for k, v in value.items()]


def list_part(label: str, items: list[Any], declared: list[str], room: int) -> str:
    """A list within ``room`` chars: records as a table, scalars as ``label: N — a, b (+k more)``."""
    if not items:
        return f"{label}{LABEL_SEPARATOR}none"
    if all(isinstance(item, dict) for item in items):
        return _table(label, items, declared, room)
    head = f"{label}{LABEL_SEPARATOR}{len(items)}{LIST_HEAD_SEPARATOR}"
    return _fit(head, (scalar(item) for item in items), len(items), ", ", room)


def json_summary(
    data: Any,
    fields: tuple[str, ...] = (),
    budget: int = SUMMARY_CHARS,
    arguments: dict[str, Any] | None = None,
) -> str:
    """A one-line summary of a parsed JSON result within ``budget`` characters.

    Args:
        fields: the tool's declared summary fields (``a``, ``a.b`` for a
            nested object's or a list's item field).
        budget: the character budget (a soft cap: the first part always shows).
        arguments: the call's arguments; a top-level field that only echoes
            one of them (``query``, ``folder``) is left out, the memory's
            title already shows it.
    """
    if isinstance(data, list):
        # A top-level list's item fields are declared as ``items.<field>`` or plainly as ``<field>``.
        return list_part(LIST_LABEL, data, _declared(fields, LIST_LABEL) or _declared(fields, ""), budget)
    if not isinstance(data, dict):
        return scalar(data)
    declared = _declared(fields, "")
    echoed = {(key, scalar(value)) for key, value in (arguments or {}).items() if _is_scalar(value)}
    parts: list[tuple[int, str]] = []  # (position in the payload, text)
    order = {key: index for index, key in enumerate(data)}
    used = 0
    omitted = 0
    ranked = _ranked_keys(data, declared)
    lists_left = sum(isinstance(data[key], list) and bool(data[key]) and key not in declared for key in ranked)
    for key in ranked:
        value = data[key]
        if value is None or (key not in declared and _is_scalar(value) and (key, scalar(value)) in echoed):
            continue
        if key not in declared and is_free_text(value, key):
            omitted += 1
            continue
        room = budget - used
        if isinstance(value, list):
            # Several lists share what is left, so the first cannot starve the others.
            # A list the tool declares takes what it needs first.
            share = room if key in declared or not value else room // max(lists_left, 1)
            lists_left -= bool(value) and key not in declared
            text = list_part(key, value, _declared(fields, key), max(share, 60))
        elif isinstance(value, dict) and (records := keyed_records(value)) is not None:
            text = list_part(key, records, _declared(fields, key), max(room // max(lists_left, 1), 60))
        elif isinstance(value, dict):
            inner = _declared(fields, key)
            keys = [k for k in _ranked_keys(value, inner)
                    if _is_scalar(value[k]) and (k in inner or not is_free_text(value[k], k))]
            pairs = PAIR_SEPARATOR.join(_pair(k, value[k]) for k in keys[: max(len(inner), ITEM_FIELDS)])
            text = f"{key}{LABEL_SEPARATOR}{pairs}"
        else:
            text = _pair(key, value)
        if parts and used + len(text) + len(FIELD_SEPARATOR) > budget and key not in declared:
            omitted += 1
            continue
        parts.append((order[key], text))
        used += len(text) + len(FIELD_SEPARATOR)
    # Declared fields read in the declared order, the rest in the payload's order.
    declared_rank = {key: index for index, key in enumerate(declared)}
    parts.sort(key=lambda part: (0, declared_rank[_key_of(part[1])]) if _key_of(part[1]) in declared_rank
               else (1, part[0]))
    summary = FIELD_SEPARATOR.join(text for _, text in parts)
    return summary + (_left_out(omitted, LEFT_OUT_FIELDS) if omitted else "")


def _key_of(text: str) -> str:
    return re.split(r"[=:]", text, maxsplit=1)[0]


_SIGNAL = re.compile(
    r"\b(ERROR|FATAL|CRITICAL|PANIC|FAIL|FAILED|FAILURE|Traceback|Exception|[A-Z][A-Za-z]+Error)\b")
_DEFINITION = re.compile(r"^(\d+\s+)?(async def|def|class|function|func|fn|pub fn|struct|interface|impl|module)\s+\w")
"""A code line that names what it defines (``nl -ba`` line numbers allowed in front)."""
_LINE_CHARS = 200
_BRIEF_SIGNALS = 2
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{2,}")
BRIEF_KEY = "brief"
"""A memory payload's short summary (a text result's :func:`text_brief`), which a
context on a small budget shows instead of the detailed one (``ContextPolicy.memory_detail_budget``)."""
TEXT_LINE_SEPARATOR = " | "
"""Between the kept lines of a text summary."""
TEXT_GAP = "…"
"""Where lines of a text summary were left out."""


def _lines(text: str) -> list[str]:
    """A text's non-blank lines, each with its whitespace collapsed."""
    return [line for line in (" ".join(raw.split()) for raw in text.strip().splitlines()) if line]


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def _rarity(lines: list[str]) -> list[float]:
    """Each line's information: the sum over its words of 1 / (lines the word occurs in).

    A word seen on one line only (a name defined there, a failing test, a path) counts 1; a word
    repeated on every progress line counts almost nothing, so repetitive noise ranks last.
    """
    words = [set(_WORD.findall(line)) for line in lines]
    spread: dict[str, int] = {}
    for found in words:
        for word in found:
            spread[word] = spread.get(word, 0) + 1
    return [sum(1 / spread[word] for word in found) for found in words]


def text_brief(text: str) -> str:
    """A text result in one short line: whole when it is as short as one line may be, else its first line, up
    to two lines that say something failed, and the line count.

    What a context on a small budget shows (:data:`BRIEF_KEY`): the identity of a log or listing and its
    trouble; everything else stays in the raw artifact, by locator.
    """
    lines = _lines(text)
    if not lines:
        return ""
    whole = TEXT_LINE_SEPARATOR.join(lines)
    if len(whole) <= _LINE_CHARS:
        return whole
    shown = [_clip(lines[0]), *[_clip(line) for line in lines[1:] if _SIGNAL.search(line)][:_BRIEF_SIGNALS]]
    body = TEXT_LINE_SEPARATOR.join(shown)
    return f"{body} ({len(lines)} lines)" if len(lines) > 1 else body


TEXT_REPEAT = " (×{count})"
"""After a line of a text summary that the text repeats on ``count`` consecutive lines."""


def _runs(lines: list[str]) -> list[tuple[str, int]]:
    """Consecutive identical lines as ``(line, how many)``, in order."""
    runs: list[tuple[str, int]] = []
    for line in lines:
        if runs and runs[-1][0] == line:
            runs[-1] = (line, runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    return runs


def text_summary(text: str, room: int = SUMMARY_CHARS) -> str:
    """A text result in about ``room`` characters: whole when it fits, else its most telling lines.

    The lines are whitespace-collapsed and joined with :data:`TEXT_LINE_SEPARATOR`. When they do
    not all fit, a line repeated on consecutive lines is said once with its count
    (:data:`TEXT_REPEAT`), and the first line (a log's or listing's identity), the lines that say
    something failed (ERROR/FAIL/exception lines, each distinct one once), the last line (a test
    run's totals, a command's verdict) and the lines of code that define a name (``def``,
    ``class``, ...: an outline) are kept first; the rest of the room goes to the lines with the most
    words found nowhere else in the result (failing tests, paths: :func:`_rarity`), so repeated
    progress noise goes first. Kept lines stay in their order, :data:`TEXT_GAP` marks where lines
    were left out, and the line count ends the summary; the raw artifact keeps every byte, by locator.
    """
    lines = _lines(text)
    if not lines:
        return ""
    whole = TEXT_LINE_SEPARATOR.join(lines)
    if len(whole) <= room:
        return whole
    runs = _runs(lines)
    texts = [_clip(line) + (TEXT_REPEAT.format(count=count) if count > 1 else "") for line, count in runs]
    last = len(runs) - 1
    signals: dict[str, int] = {}  # each distinct failure line once: its first run
    for i in range(1, len(runs)):
        if runs[i][0] not in signals and _SIGNAL.search(runs[i][0]):
            signals[runs[i][0]] = i
    first = [0, *signals.values(), last, *(i for i in range(1, len(runs)) if _DEFINITION.match(runs[i][0]))]
    rarity = _rarity([line for line, _ in runs])
    leading = set(first)
    rest = sorted((i for i in range(len(runs)) if i not in leading), key=lambda i: (-rarity[i], i))
    kept: set[int] = set()
    spent = 0
    for i in dict.fromkeys([*first, *rest]):
        cost = len(texts[i]) + len(TEXT_LINE_SEPARATOR)
        if spent + cost > room and kept:
            continue
        kept.add(i)
        spent += cost
    parts: list[str] = []
    for i in sorted(kept):
        if parts and i - 1 not in kept:
            parts.append(TEXT_GAP)
        parts.append(texts[i])
    if max(kept) < last:
        parts.append(TEXT_GAP)
    shown = sum(runs[i][1] for i in kept)
    return f"{TEXT_LINE_SEPARATOR.join(parts)} ({len(lines)} lines, {shown} shown)"


__all__ = [
    "BRIEF_KEY",
    "CELL_SEPARATOR",
    "COMMON_CLOSE",
    "COMMON_OPEN",
    "FIELD_SEPARATOR",
    "FREE_TEXT_CHARS",
    "HEADER_CLOSE",
    "HEADER_OPEN",
    "ITEM_FIELDS",
    "KEY_VALUE_SEPARATOR",
    "LABEL_SEPARATOR",
    "LEFT_OUT_CLOSE",
    "LEFT_OUT_FIELDS",
    "LEFT_OUT_ITEMS",
    "LEFT_OUT_OPEN",
    "LIST_HEAD_SEPARATOR",
    "LIST_LABEL",
    "MAX_ITEMS",
    "MAX_VALUE_CHARS",
    "PAIR_SEPARATOR",
    "ROW_SEPARATOR",
    "SUMMARY_CHARS",
    "SUMMARY_MAX_CHARS",
    "SUMMARY_SHARE",
    "TEXT_GAP",
    "TEXT_LINE_SEPARATOR",
    "TEXT_REPEAT",
    "is_free_text",
    "json_summary",
    "key_tier",
    "list_part",
    "scalar",
    "summary_budget",
    "text_brief",
    "text_summary",
]
