"""Facts a script reads out of memory summaries, as :mod:`policy.derive` writes them.

A script never sees raw tool results, only the one-line summaries in its
context, so these readers parse exactly those shapes::

    workspace.list_files() → items: 4 — {path=README.txt, bytes=1271}; {path=sales/2026-q2-orders.csv, rows=40}; ...
    workspace.read_csv(path=...) → 60 rows × 5 cols [order_id,region,...]; units sum 4619; revenue_eur sum 458080.39
    table.aggregate(...) → total=458080.39; groups: 6 — {group=Benelux, sum=133510.04, rows=10}; ... (+2 more)

Each reader returns what it found and nothing it did not: a summary that
was cut short yields fewer groups, never invented ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_LISTED = re.compile(r"\{path=(?P<path>[^,}]+)(?P<rest>[^}]*)\}")
_ROWS_FIELD = re.compile(r"rows=(\d+)")
_SHAPE = re.compile(r"(?P<rows>\d+) rows × (?P<cols>\d+) cols \[(?P<names>[^\]]*)\]")
_SUM = re.compile(r"(?P<column>[\w.-]+) sum (?P<value>-?[\d.]+)")
_TOTAL = re.compile(r"(?:^|; )total=(?P<total>-?[\d.]+)")
_GROUP = re.compile(r"\{group=(?P<group>[^,}]*), sum=(?P<sum>-?[\d.]+)(?:, rows=(?P<rows>\d+))?\}")
_COMMON_ROWS = re.compile(r"groups: \d+ \(all rows=(?P<rows>\d+)\)")
_MORE = re.compile(r"groups: .*\(\+(?P<more>\d+) more\)")


@dataclass(frozen=True)
class ListedFile:
    """One entry of a workspace listing."""

    path: str
    rows: int | None = None


def listed_files(summary: str) -> list[ListedFile]:
    """Files named in a ``workspace.list_files`` summary, in listing order."""
    out: list[ListedFile] = []
    for found in _LISTED.finditer(summary):
        rows = _ROWS_FIELD.search(found.group("rest"))
        out.append(ListedFile(found.group("path").strip(), int(rows.group(1)) if rows else None))
    return out


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
    columns = tuple(name for name in found.group("names").split(",") if name)
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
    total = _TOTAL.search(summary)
    common = _COMMON_ROWS.search(summary)
    groups = []
    for found in _GROUP.finditer(summary):
        rows = found.group("rows") or (common.group("rows") if common else None)
        value = _decimal(found.group("sum"))
        if value is not None:
            groups.append(Group(found.group("group").strip(), value, int(rows) if rows else None))
    more = _MORE.search(summary)
    return Aggregate(
        total=_decimal(total.group("total")) if total else None,
        groups=tuple(groups),
        hidden=int(more.group("more")) if more else 0,
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


__all__ = ["Aggregate", "CsvShape", "Group", "ListedFile", "aggregate", "csv_shape", "listed_files", "pick_column"]
