"""``table.aggregate``: exact group sums over a workspace CSV.

Sums are :class:`~decimal.Decimal` and travel as strings, so ``1234.50`` stays
``1234.50``: a float would turn money into ``1234.4999999``, and a model
quoting a total must quote the exact one.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolExecutionError, ToolResult
from activities.tools.workspace import MAX_READ_BYTES, resolve_path
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec


def aggregate_csv(text: str, path: str, group_by: str, value: str) -> dict[str, Any]:
    """Sum ``value`` per distinct ``group_by`` over the data rows of a CSV.

    Args:
        text: the CSV, header first.
        path: the file's workspace path (echoed in the result).
        group_by: the column whose values form the groups.
        value: the numeric column to sum.

    Returns:
        ``{"path", "group_by", "value", "groups": [{"group", "sum", "rows"}], "total"}``
        with groups sorted by name and sums as exact decimal strings.

    Raises:
        ToolArgumentError: no header, an unknown column, or a value that is not a number.
    """
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise ToolArgumentError(f"{path} is empty; it has no header row")
    columns = [column.strip() for column in header]
    for column in (group_by, value):
        if column not in columns:
            raise ToolArgumentError(f"{path} has no column {column!r}; its columns are {', '.join(columns)}")
    key_at, value_at = columns.index(group_by), columns.index(value)
    sums: dict[str, Decimal] = {}
    counts: dict[str, int] = {}
    # Line 1 is the header, so the first data row is line 2: the number a person finds in an editor.
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) <= max(key_at, value_at):
            raise ToolArgumentError(f"{path} line {line} has {len(row)} field(s); the header has {len(columns)}")
        amount = _decimal(row[value_at])
        if amount is None:
            raise ToolArgumentError(f"{path} line {line}: {value} {row[value_at]!r} is not a number")
        group = row[key_at].strip()
        sums[group] = sums.get(group, Decimal(0)) + amount
        counts[group] = counts.get(group, 0) + 1
    groups = [{"group": group, "sum": str(sums[group]), "rows": counts[group]} for group in sorted(sums)]
    return {
        "path": path,
        "group_by": group_by,
        "value": value,
        "groups": groups,
        "total": str(sum(sums.values(), Decimal(0))),
    }


def _decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    # "NaN" and "Infinity" parse, but they are not amounts.
    return number if number.is_finite() else None


def _aggregate_file(workspace: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    path = arguments["path"]
    target = resolve_path(workspace, path)
    if target.stat().st_size > MAX_READ_BYTES:
        raise ToolArgumentError(f"{path} is larger than {MAX_READ_BYTES} bytes")
    try:
        text = target.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ToolArgumentError(f"{path} is not UTF-8 text: {error}") from error
    return aggregate_csv(text, path, arguments["group_by"], arguments["value"])


async def aggregate(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``table.aggregate``: group sums of a workspace CSV as JSON."""
    try:
        result = await asyncio.to_thread(_aggregate_file, context.workspace, arguments)
    except csv.Error as error:
        raise ToolArgumentError(f"{arguments['path']} is not valid CSV: {error}") from error
    except OSError as error:
        raise ToolExecutionError(f"could not read {arguments['path']}: {error}") from error
    return ToolResult(payload=json.dumps(result, ensure_ascii=False).encode(), content_type="application/json")


TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name="table.aggregate",
            result_kind="json",
            privacy=PrivacyClass.USER,
            # Computed from read-only workspace data: the totals stay true.
            freshness=FreshnessClass.DURABLE,
            key_args=("path", "group_by", "value"),
            summary_fields=("total", "groups.group", "groups.sum", "groups.rows"),
            summary_chars=400,
        ),
        description=(
            "Group the rows of a workspace CSV by one column and sum a numeric column per group. "
            "Sums are exact decimals (returned as strings), groups sorted by name, with a row count each."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "CSV path in the workspace.", "minLength": 1},
                "group_by": {"type": "string", "description": "Column to group by, e.g. 'region'.", "minLength": 1},
                "value": {"type": "string", "description": "Numeric column to sum, e.g. 'revenue_eur'.",
                          "minLength": 1},
            },
            "required": ["path", "group_by", "value"],
            "additionalProperties": False,
        },
        run=aggregate,
        timeout_seconds=30.0,
    ),
)
"""The table tools, for the registry."""


__all__ = ["TOOLS", "aggregate", "aggregate_csv"]
