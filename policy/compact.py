"""Structured tool results as compact, lossless text: every value, without JSON's repeated syntax.

A tool message is written to a provider's cache once and read on every later
call of its epoch, so its size is paid again and again. JSON and Python
literals spend much of it on syntax: quotes, braces, and the same keys on
every record of a list. :func:`compact_text` writes the same document as
indented ``key: value`` lines, a list of records as a table whose column
names are said once, and a list of scalars on one line::

    reservation_id: JG7FMM
    flights[2]: origin | destination | flight_number | date | price
    - JFK | SFO | HAT028 | 2024-05-21 | 134
    - SFO | JFK | HAT271 | 2024-05-25 | 110
    passengers[1]: first_name | last_name | dob
    - Mei | Johansson | 1981-09-25
    tags: [window, aisle]

Nothing is summarised away: every scalar appears verbatim (numbers exactly
as the result wrote them, ``5.50`` stays ``5.50``), and :func:`parse_compact`
reads the text back into the same document. A string that could read as
something else (a number, ``null``, a quote, a cell separator, a line break)
is written as a JSON string, so the round trip is exact up to numbers being
kept as their text; the tests check it on every result of the shared
trajectories. The rendering is used only when it is shorter than the raw
result by :data:`MIN_SAVING`; otherwise the raw text is sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from policy.payloads import NumberText, parse_structured

MIN_SAVING = 0.1
"""The compact text is used only when it is at least this share shorter than the raw result."""

INDENT = "  "
"""One level of nesting."""
ROW_MARK = "- "
"""Starts a table row or a list item."""
GROUP_MARK = "+ "
"""Starts a row that continues the group above (a list of lists of records is one table)."""
PATH = "."
"""Joins a column and a field of the records it holds (``prices.economy``); keys with a dot are quoted."""
CELL = " | "
"""Separates a table's columns and cells."""
KEY_SEPARATOR = ": "
"""Between a key and its value."""

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$@.+/-][A-Za-z0-9_ $@.+/#-]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_RESERVED = frozenset({"null", "true", "false", "{}", "[]", "", "NaN", "Infinity"})


def compact_text(raw: str) -> str | None:
    """The compact rendering of a JSON or Python-literal result, or ``None``.

    ``None`` when the result is not a structured container, or when the
    rendering would not save :data:`MIN_SAVING` of its length.
    """
    try:
        data, _ = parse_structured(raw, exact_numbers=True)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, (dict, list)) or not data:
        return None
    text = "\n".join(_block(data, 0))
    return text if len(text) <= len(raw) * (1 - MIN_SAVING) else None


# --------------------------------------------------------------------------- writing


def _scalar(value: Any, cell: bool = False) -> str:
    """One scalar as the compact text writes it: bare when it cannot be misread, else as JSON."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, NumberText):
        return str(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, (dict, list)):
        return to_json(value)
    text = str(value)
    if (text in _RESERVED or _NUMBER.fullmatch(text) or text != text.strip() or _SPECIAL.search(text)
            or text[0] == "-" or '"' in text or (cell and "|" in text) or ", " in text or text.endswith(",")):
        return json.dumps(text, ensure_ascii=False)
    return text


_SPECIAL = re.compile(r"[\[\]{}\n\r\t]")
"""A string with brackets, braces or control characters is written as JSON (it could read as a container)."""


def to_json(value: Any) -> str:
    """Compact JSON of a parsed document (a cell's container, a round trip), numbers as the result wrote them."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, NumberText):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) and key == key.strip() and ": " not in key and not key.endswith(":") \
        and PATH not in key else json.dumps(key, ensure_ascii=False)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


Column = tuple[str, str | None]
"""A table column: a key, or (key, field) for a field of the records a key holds."""


def _columns(rows: list[dict[str, Any]]) -> list[Column] | None:
    """The table's columns, records of scalars flattened to ``key.field``.

    ``None`` when the records do not make one table (a cell would hold a
    record of records, or a list of containers).
    """
    keys: list[str] = []
    flattened: set[str] = set()
    plain: set[str] = set()
    for row in rows:
        for key, value in row.items():
            if isinstance(value, dict) and value and all(_is_scalar(v) for v in value.values()):
                flattened.add(key)
            elif _is_scalar(value) or value in ([], {}) or (isinstance(value, list) and all(map(_is_scalar, value))):
                plain.add(key)
            else:
                return None
            if key not in keys:
                keys.append(key)
    flattened -= plain  # a column that is sometimes not a record stays one cell (compact JSON)
    columns: list[Column] = []
    for key in keys:
        if key not in flattened:
            columns.append((key, None))
            continue
        fields: list[str] = []
        for row in rows:
            for field in row.get(key, {}):
                if field not in fields:
                    fields.append(field)
        columns += [(key, field) for field in fields]
    return columns or None


def _cells(row: dict[str, Any], columns: list[Column]) -> str:
    cells = []
    for key, field in columns:
        holder, name = (row.get(key, {}), field) if field is not None else (row, key)
        cells.append(_scalar(holder[name], cell=True) if name in holder else "")
    while cells and cells[-1] == "":
        cells.pop()  # missing trailing cells are left out; the reader pads them
    return CELL.join(cells)


def _table(head: str, pad: str, groups: list[list[dict[str, Any]]], grouped: bool) -> list[str] | None:
    """A list of records (or, ``grouped``, a list of lists of records) as one table."""
    rows = [row for group in groups for row in group]
    columns = _columns(rows)
    if columns is None:
        return None
    header = CELL.join(_key(key) if field is None else f"{_key(key)}{PATH}{_key(field)}" for key, field in columns)
    size = f"{len(groups)}/{len(rows)}" if grouped else str(len(rows))
    lines = [f"{head}[{size}]{KEY_SEPARATOR}{header}"]
    for group in groups:
        for index, row in enumerate(group):
            mark = ROW_MARK if index == 0 or not grouped else GROUP_MARK
            lines.append(f"{pad}{mark}{_cells(row, columns)}".rstrip())
    return lines


def _block(value: Any, depth: int, key: str | None = None) -> list[str]:
    """Lines for ``value`` at ``depth``, under ``key`` (``None`` at the top or as a list item)."""
    pad = INDENT * depth
    head = f"{pad}{_key(key)}" if key is not None else None
    if isinstance(value, dict):
        if not value:
            return [f"{head}{KEY_SEPARATOR}{{}}" if head else f"{pad}{{}}"]
        lines = [f"{head}:"] if head else []
        inner = depth + 1 if head else depth
        for child_key, child in value.items():
            if _is_scalar(child):
                lines.append(f"{INDENT * inner}{_key(child_key)}{KEY_SEPARATOR}{_scalar(child)}")
            else:
                lines += _block(child, inner, child_key)
        return lines
    if not value:
        return [f"{head}{KEY_SEPARATOR}[]" if head else f"{pad}[]"]
    if all(_is_scalar(item) for item in value):
        items = "[" + ", ".join(_scalar(item) for item in value) + "]"
        return [f"{head}{KEY_SEPARATOR}{items}" if head else f"{pad}{items}"]
    if all(isinstance(item, dict) and item for item in value) and \
            (table := _table(head or pad, pad, [value], grouped=False)) is not None:
        return table
    if all(isinstance(item, list) and item and all(isinstance(row, dict) and row for row in item) for item in value) \
            and (table := _table(head or pad, pad, value, grouped=True)) is not None:
        return table
    lines = [f"{head}:"] if head else []
    inner = depth + 1 if head else depth
    for item in value:
        if _is_scalar(item):
            lines.append(f"{INDENT * inner}{ROW_MARK}{_scalar(item)}")
        else:
            lines.append(f"{INDENT * inner}{ROW_MARK.strip()}")
            lines += _block(item, inner + 1)
    return lines


# --------------------------------------------------------------------------- reading


class CompactParseError(ValueError):
    """Text that :func:`compact_text` did not write."""


def parse_compact(text: str) -> Any:
    """The document behind a compact text (numbers as :class:`NumberText`).

    Raises:
        CompactParseError: the text is not a compact rendering.
    """
    lines = text.split("\n")
    value, end = _parse_block(lines, 0, 0)
    if end != len(lines):
        raise CompactParseError(f"line {end + 1}: unexpected {lines[end]!r}")
    return value


def _depth(line: str) -> int:
    stripped = line.lstrip(" ")
    spaces = len(line) - len(stripped)
    if spaces % len(INDENT):
        raise CompactParseError(f"odd indentation: {line!r}")
    return spaces // len(INDENT)


def _parse_block(lines: list[str], start: int, depth: int) -> tuple[Any, int]:
    """The value whose lines begin at ``start`` with indentation ``depth``; returns it and the next line."""
    if start >= len(lines):
        raise CompactParseError("a block ends before it starts")
    first = lines[start][len(INDENT) * depth:]
    if first in ("{}", "[]"):
        return ({} if first == "{}" else []), start + 1
    head = _table_head(first)
    if head and not head.group("key"):  # a table of its own; ``key[N]: ...`` is a dict's entry
        return _parse_table(lines, start, depth)
    if first.startswith("["):
        return _parse_inline_list(first), start + 1
    if first == ROW_MARK.strip() or first.startswith(ROW_MARK):
        return _parse_items(lines, start, depth)
    return _parse_dict(lines, start, depth)


def _table_head(text: str) -> re.Match[str] | None:
    return re.match(r'^(?P<key>"(?:[^"\\]|\\.)*"|[^:\["]*)?\[(?:(?P<groups>\d+)/)?(?P<n>\d+)\]: (?P<header>.*)$', text)


def _parse_dict(lines: list[str], start: int, depth: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    index = start
    pad = INDENT * depth
    while index < len(lines) and lines[index].startswith(pad) and _depth(lines[index]) == depth:
        line = lines[index][len(pad):]
        if line.startswith(ROW_MARK) or line == ROW_MARK.strip():
            break
        if (table := _table_head(line)) and table.group("key"):
            key = _read_key(table.group("key"))
            out[key], index = _parse_table(lines, index, depth, strip_key=True)
            continue
        key_text, rest = _split_key(line)
        key = _read_key(key_text)
        if rest is None:  # ``key:`` then a nested block
            out[key], index = _parse_block(lines, index + 1, depth + 1)
            continue
        out[key] = _parse_inline_list(rest) if rest.startswith("[") and rest != "[]" else _read_scalar(rest)
        index += 1
    if index == start:
        raise CompactParseError(f"line {start + 1}: expected a key: {lines[start]!r}")
    return out, index


def _split_key(line: str) -> tuple[str, str | None]:
    if line.startswith('"'):
        key, end = json.JSONDecoder().raw_decode(line)
        rest = line[end:]
        key_text = line[:end]
    else:
        cut = line.find(KEY_SEPARATOR)
        if cut < 0:
            if line.endswith(":"):
                return line[:-1], None
            raise CompactParseError(f"no key in {line!r}")
        key_text, rest = line[:cut], line[cut:]
    if rest == ":":
        return key_text, None
    if not rest.startswith(KEY_SEPARATOR):
        raise CompactParseError(f"no key separator in {line!r}")
    return key_text, rest[len(KEY_SEPARATOR):]


def _read_key(text: str) -> str:
    return json.loads(text) if text.startswith('"') else text


def _read_scalar(text: str) -> Any:
    if text == "null":
        return None
    if text in ("true", "false"):
        return text == "true"
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("{") or text.startswith("["):
        return json.loads(text, parse_float=NumberText, parse_int=NumberText)
    if _NUMBER.fullmatch(text) or text in ("NaN", "Infinity", "-Infinity"):
        return NumberText(text)
    return text


def _split_outside_strings(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` where it is not inside a JSON string or container."""
    parts: list[str] = []
    depth = 0
    quoted = False
    escaped = False
    current = 0
    index = 0
    while index < len(text):
        char = text[index]
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif depth == 0 and text.startswith(separator, index):
            parts.append(text[current:index])
            index += len(separator)
            current = index
            continue
        index += 1
    parts.append(text[current:])
    return parts


def _parse_inline_list(text: str) -> list[Any]:
    if not (text.startswith("[") and text.endswith("]")):
        raise CompactParseError(f"not a list: {text!r}")
    body = text[1:-1]
    return [_read_scalar(item) for item in _split_outside_strings(body, ", ")] if body else []


def _parse_table(lines: list[str], start: int, depth: int, strip_key: bool = False) -> tuple[list[Any], int]:
    head = _table_head(lines[start][len(INDENT) * depth:])
    if head is None:
        raise CompactParseError(f"not a table head: {lines[start]!r}")
    columns = [_read_column(c.strip(" ")) for c in _split_outside_strings(head.group("header"), "|")]
    count = int(head.group("n"))
    pad = INDENT * depth
    groups: list[list[dict[str, Any]]] = []
    for index in range(start + 1, start + 1 + count):
        line = lines[index][len(pad):] if index < len(lines) and lines[index].startswith(pad) else ""
        mark = line[:1]
        if mark not in (ROW_MARK[0], GROUP_MARK[0]) or (mark == GROUP_MARK[0] and not groups):
            raise CompactParseError(f"table at line {start + 1} has fewer than {count} rows")
        cells = [cell.strip(" ") for cell in _split_outside_strings(line[1:], "|")]
        if len(cells) > len(columns):
            raise CompactParseError(f"line {index + 1}: {len(cells)} cells under {len(columns)} columns")
        row: dict[str, Any] = {}
        for (parent, field), cell in zip(columns, cells, strict=False):
            if cell == "":
                continue
            if field is None:
                row[parent] = _read_scalar(cell)
            else:
                row.setdefault(parent, {})[field] = _read_scalar(cell)
        if mark == ROW_MARK[0]:
            groups.append([])
        groups[-1].append(row)
    rows: list[Any] = groups if head.group("groups") else [row for group in groups for row in group]
    return rows, start + 1 + count


def _read_column(text: str) -> Column:
    """A header cell: ``key`` or ``key.field`` (either part JSON-quoted when it is not a plain key)."""
    if text.startswith('"'):
        key, end = json.JSONDecoder().raw_decode(text)
        rest = text[end:]
    else:
        key, dot, rest = text.partition(PATH)
        rest = dot + rest
    if not rest:
        return key, None
    if not rest.startswith(PATH):
        raise CompactParseError(f"not a column: {text!r}")
    return key, _read_key(rest[len(PATH):])


def _parse_items(lines: list[str], start: int, depth: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    pad = INDENT * depth
    index = start
    while index < len(lines) and lines[index].startswith(pad) and _depth(lines[index]) == depth:
        line = lines[index][len(pad):]
        if line == ROW_MARK.strip():
            value, index = _parse_block(lines, index + 1, depth + 1)
            out.append(value)
        elif line.startswith(ROW_MARK):
            out.append(_read_scalar(line[len(ROW_MARK):]))
            index += 1
        else:
            break
    return out, index


__all__ = ["CELL", "MIN_SAVING", "CompactParseError", "compact_text", "parse_compact", "to_json"]
