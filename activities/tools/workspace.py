"""Workspace tools: list and read the files of a read-only data folder.

The workspace folder is the worker's to choose (the composition root passes
``dossier.runtime.SAMPLE_WORKSPACE``, the sample dataset, by default); tools
get it through :class:`~activities.tools.base.ToolContext`.

Every path a model sends is resolved inside the workspace root and refused if
it leaves it (``..``, an absolute path, a symlink pointing outside): a tool
argument is untrusted input.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path, PurePosixPath
from typing import Any

from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolExecutionError, ToolResult
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec

MAX_READ_BYTES = 16 * 1024 * 1024
"""Larger files are refused by ``workspace.read_csv``: a tool result is captured whole."""


def resolve_path(workspace: Path, path: str) -> Path:
    """The file ``path`` names inside ``workspace``, refusing anything outside it.

    Args:
        path: a relative, ``/``-separated path as the model wrote it.

    Returns:
        The resolved absolute path of an existing regular file.

    Raises:
        ToolArgumentError: an empty, absolute or escaping path, or no such file.
    """
    if not path.strip() or "\x00" in path or "\\" in path:
        raise ToolArgumentError(f"invalid path {path!r}: give a relative path like 'sales/2026-q3-orders.csv'")
    relative = PurePosixPath(path)
    if relative.is_absolute():
        raise ToolArgumentError(f"path {path!r} is absolute; paths are relative to the workspace")
    root = workspace.resolve()
    target = (root / relative).resolve()
    # resolve() follows symlinks, so a link pointing outside the root is caught here too.
    if not target.is_relative_to(root):
        raise ToolArgumentError(f"path {path!r} points outside the workspace")
    if target.is_dir():
        raise ToolArgumentError(f"{path} is a folder; use workspace.list_files to see its files")
    if not target.is_file():
        raise ToolArgumentError(f"no file {path!r} in the workspace; use workspace.list_files to see what exists")
    return target


def _csv_rows(path: Path) -> int | None:
    """Data rows of a CSV (header excluded, blank lines skipped), counted as derivation counts them.

    Streamed, so listing a large file costs no memory; ``None`` when the file does not parse as CSV.
    """
    try:
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            return max(sum(1 for row in csv.reader(handle) if row) - 1, 0)
    except csv.Error:
        return None


def _listing(workspace: Path, prefix: str) -> list[dict[str, Any]]:
    root = workspace.resolve()
    if not root.is_dir():
        raise ToolExecutionError(f"workspace folder {workspace} is missing")
    entries: list[dict[str, Any]] = []
    for file in root.rglob("*"):
        relative = file.relative_to(root).as_posix()
        # Hidden files and caches are not data; links leading outside the root are not ours to show.
        if any(part.startswith(".") or part == "__pycache__" for part in file.relative_to(root).parts):
            continue
        if not file.is_file() or not file.resolve().is_relative_to(root) or not relative.startswith(prefix):
            continue
        entry: dict[str, Any] = {"path": relative, "bytes": file.stat().st_size}
        rows = _csv_rows(file) if file.suffix.lower() == ".csv" else None
        if rows is not None:
            entry["rows"] = rows
        entries.append(entry)
    return sorted(entries, key=lambda entry: entry["path"])


async def list_files(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``workspace.list_files``: every file under the prefix, sorted, with sizes and CSV row counts."""
    prefix = arguments.get("prefix", "").lstrip("/")
    try:
        entries = await asyncio.to_thread(_listing, context.workspace, prefix)
    except OSError as error:
        raise ToolExecutionError(f"could not list the workspace: {error}") from error
    return ToolResult(payload=json.dumps(entries, ensure_ascii=False).encode(), content_type="application/json")


def _read(workspace: Path, path: str) -> bytes:
    target = resolve_path(workspace, path)
    if target.suffix.lower() != ".csv":
        raise ToolArgumentError(f"{path} is not a CSV file; workspace.read_csv reads .csv files only")
    size = target.stat().st_size
    if size > MAX_READ_BYTES:
        raise ToolArgumentError(f"{path} is {size} bytes; workspace.read_csv reads at most {MAX_READ_BYTES}")
    return target.read_bytes()


async def read_csv(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``workspace.read_csv``: the file's bytes, exactly as stored."""
    try:
        data = await asyncio.to_thread(_read, context.workspace, arguments["path"])
    except OSError as error:
        raise ToolExecutionError(f"could not read {arguments['path']}: {error}") from error
    return ToolResult(payload=data, content_type="text/csv")


TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name="workspace.list_files",
            result_kind="json",
            privacy=PrivacyClass.USER,
            # A listing changes when files are added; it holds for the working session.
            freshness=FreshnessClass.SESSION,
            key_args=("prefix",),
            summary_fields=("path", "rows"),
            summary_chars=400,
        ),
        description=(
            "List the files in the user's data workspace, sorted by path, with their size in bytes "
            "and, for CSV files, their number of data rows."
        ),
        parameters={
            "type": "object",
            "properties": {
                "prefix": {
                    "type": "string",
                    "description": "Only list paths starting with this, e.g. 'sales/'. Empty lists everything.",
                    "default": "",
                },
            },
            "required": [],
            "additionalProperties": False,
        },
        run=list_files,
        timeout_seconds=30.0,
    ),
    RegisteredTool(
        spec=ToolSpec(
            name="workspace.read_csv",
            result_kind="csv",
            privacy=PrivacyClass.USER,
            # Workspace files are read-only data: what was read stays true.
            freshness=FreshnessClass.DURABLE,
            key_args=("path",),
        ),
        description="Read one CSV file from the user's data workspace and return its exact contents.",
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path relative to the workspace, e.g. 'sales/2026-q3-orders.csv'.",
                    "minLength": 1,
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        run=read_csv,
        timeout_seconds=30.0,
    ),
)
"""The workspace tools, for the registry."""


__all__ = ["MAX_READ_BYTES", "TOOLS", "list_files", "read_csv", "resolve_path"]
