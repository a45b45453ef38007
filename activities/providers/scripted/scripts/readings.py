"""Facts a script reads out of memory summaries, as :mod:`policy.summarise` and :mod:`policy.derive` write them.

A script never sees raw tool results, only the one-line summaries in its
context, so these readers parse exactly those shapes::

    workspace.list_files() → items: 4 [path|rows|bytes] — README.txt||1271; sales/2026-q2-orders.csv|40|2033; ...
    workspace.read_csv(path=...) → 60 rows × 5 cols [order_id,region,...]; units sum 4619; revenue_eur sum 458080.39
    table.aggregate(...) → total=458080.39; groups: 6 [group|sum|rows] — Benelux|133510.04|10; ... (+2 more)

The patterns are built from the writers' own constants (a JSON summary's
punctuation from :mod:`policy.summarise`, the CSV summary's words from
:mod:`policy.derive`), so the two sides cannot drift apart.

Each reader returns what it found and nothing it did not: a summary that
was cut short yields fewer groups, never invented ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from policy.derive import CSV_COLUMNS, CSV_NAME_SEPARATOR, CSV_ROWS, CSV_SUM, RESULT_SEPARATOR
from policy.summarise import (
    CELL_SEPARATOR,
    COMMON_CLOSE,
    COMMON_OPEN,
    FIELD_SEPARATOR,
    HEADER_CLOSE,
    HEADER_OPEN,
    KEY_VALUE_SEPARATOR,
    LABEL_SEPARATOR,
    LEFT_OUT_CLOSE,
    LEFT_OUT_FIELDS,
    LEFT_OUT_ITEMS,
    LEFT_OUT_OPEN,
    LIST_HEAD_SEPARATOR,
    LIST_LABEL,
    PAIR_SEPARATOR,
    ROW_SEPARATOR,
)


def _one_of(*texts: str) -> str:
    """A regex alternation matching any of ``texts`` literally."""
    return "|".join(re.escape(text) for text in texts)


def _up_to(close: str) -> str:
    """A regex for any text (line breaks included) that does not contain ``close``."""
    return "(?:(?!" + re.escape(close) + ").)*"


_SHAPE = re.compile(
    r"(?P<rows>\d+)" + re.escape(CSV_ROWS) + r"(?P<cols>\d+)" + re.escape(CSV_COLUMNS + HEADER_OPEN)
    + "(?P<names>" + _up_to(HEADER_CLOSE) + ")" + re.escape(HEADER_CLOSE), re.DOTALL)
_SUM = re.compile(r"(?P<column>[\w.-]+)" + re.escape(CSV_SUM) + r"(?P<value>-?[\d.]+)")
_TAIL = re.compile(
    re.escape(LEFT_OUT_OPEN) + r"(?P<n>\d+)(?P<what>" + _one_of(LEFT_OUT_ITEMS, LEFT_OUT_FIELDS) + ")"
    + re.escape(LEFT_OUT_CLOSE) + "$")
# Pieces of a table's head: ``<label>: N (all k=v, ...) [a|b|c] — ``.
_PART_START = "(?:^|" + _one_of(FIELD_SEPARATOR, RESULT_SEPARATOR) + ")"
_COMMON = ("(?:" + re.escape(COMMON_OPEN) + "(?P<common>" + _up_to(COMMON_CLOSE) + ")"
           + re.escape(COMMON_CLOSE) + ")?")
_HEADER = (re.escape(HEADER_OPEN) + "(?P<cols>" + _up_to(HEADER_CLOSE) + ")"
           + re.escape(HEADER_CLOSE + LIST_HEAD_SEPARATOR))
_FIELD_START = "(?:^|" + re.escape(FIELD_SEPARATOR) + ")"
_FIELD_END = ("(?=" + re.escape(FIELD_SEPARATOR) + "|" + re.escape(LEFT_OUT_OPEN) + r"\d+"
              + re.escape(LEFT_OUT_FIELDS + LEFT_OUT_CLOSE) + "$|$)")


def field(summary: str, key: str) -> str | None:
    """The value of the top-level scalar field ``key`` (``key=value``) in a summary, or ``None``.

    The value runs to the next field, the ``(+N fields in raw)`` tail or the
    end of the summary.
    """
    found = re.search(_FIELD_START + re.escape(key + KEY_VALUE_SEPARATOR) + "(?P<value>.*?)" + _FIELD_END, summary)
    return found.group("value") if found else None


@dataclass(frozen=True)
class Table:
    """A list of records as a summary shows it: ``label: N (all k=v) [a|b] — 1|x; 2|y (+k more)``."""

    count: int
    rows: tuple[dict[str, str], ...]
    """Shown records, each with the shared ``all`` fields filled in; empty cells left out."""
    hidden: int


def table(summary: str, label: str) -> Table | None:
    """The table called ``label`` in a summary, or ``None`` when it has none."""
    head = re.search(_PART_START + re.escape(label + LABEL_SEPARATOR) + r"(?P<count>\d+)" + _COMMON + _HEADER,
                     summary, re.DOTALL)
    if head is None:
        return None
    columns = head.group("cols").split(CELL_SEPARATOR)
    pairs = (head.group("common") or "").split(PAIR_SEPARATOR)
    common = dict(pair.split(KEY_VALUE_SEPARATOR, 1) for pair in pairs if KEY_VALUE_SEPARATOR in pair)
    rows: list[dict[str, str]] = []
    hidden = 0
    for segment in summary[head.end():].split(ROW_SEPARATOR):
        tail = _TAIL.search(segment)
        cells = (segment[: tail.start()] if tail else segment).split(CELL_SEPARATOR)
        if len(cells) != len(columns):
            break
        rows.append({**common, **{c: v for c, v in zip(columns, cells, strict=True) if v}})
        if tail:
            hidden = int(tail.group("n")) if tail.group("what") == LEFT_OUT_ITEMS else 0
            break
    return Table(count=int(head.group("count")), rows=tuple(rows), hidden=hidden)


@dataclass(frozen=True)
class ListedFile:
    """One entry of a workspace listing."""

    path: str
    rows: int | None = None


def listed_files(summary: str) -> list[ListedFile]:
    """Files named in a ``workspace.list_files`` summary, in listing order."""
    listing = table(summary, LIST_LABEL)
    if listing is None:
        return []
    return [ListedFile(row["path"], int(row["rows"]) if row.get("rows", "").isdigit() else None)
            for row in listing.rows if "path" in row]


@dataclass(frozen=True)
class CsvShape:
    """What a ``workspace.read_csv`` summary says about a file."""

    rows: int
    columns: tuple[str, ...]
    sums: dict[str, str]
    """Column -> exact sum, for the numeric columns the summary shows."""


def csv_shape(summary: str) -> CsvShape | None:
    """The rows, columns and sums of a CSV summary, or ``None`` when it is not one."""
    found = _SHAPE.search(summary)
    if not found:
        return None
    columns = tuple(name for name in found.group("names").split(CSV_NAME_SEPARATOR) if name)
    sums = {m.group("column"): m.group("value") for m in _SUM.finditer(summary[found.end():])}
    return CsvShape(rows=int(found.group("rows")), columns=columns, sums=sums)


@dataclass(frozen=True)
class Group:
    """One group of a ``table.aggregate`` result."""

    name: str
    sum: Decimal
    rows: int | None


@dataclass(frozen=True)
class Aggregate:
    """What a ``table.aggregate`` summary shows."""

    total: Decimal | None
    groups: tuple[Group, ...]
    hidden: int
    """Groups the summary left out (``(+N more)``)."""

    @property
    def rows(self) -> int | None:
        """Rows over the shown groups, when every shown group has a count."""
        counts = [group.rows for group in self.groups]
        return sum(counts) if counts and all(c is not None for c in counts) and not self.hidden else None


def aggregate(summary: str) -> Aggregate:
    """The total and groups of an aggregate summary."""
    total = field(summary, "total")
    shown = table(summary, "groups")
    groups = []
    for row in shown.rows if shown else ():
        value = _decimal(row.get("sum", ""))
        if value is not None and "group" in row:
            rows = row.get("rows", "")
            groups.append(Group(row["group"], value, int(rows) if rows.isdigit() else None))
    return Aggregate(
        total=_decimal(total) if total is not None else None,
        groups=tuple(groups),
        hidden=shown.hidden if shown else 0,
    )


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def pick_column(columns: tuple[str, ...] | list[str], preferred: tuple[str, ...], fallback: str) -> str:
    """The first preferred column the file has, else ``fallback``."""
    for name in preferred:
        if name in columns:
            return name
    return fallback


__all__ = ["Aggregate", "CsvShape", "Group", "ListedFile", "Table", "aggregate", "csv_shape", "field", "listed_files",
           "pick_column", "table"]
