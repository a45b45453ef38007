"""``workspace.list_files`` and ``workspace.read_csv`` over the shipped sample data and a scratch copy."""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from activities.tools.base import ToolArgumentError, ToolExecutionError
from dossier.runtime import SAMPLE_WORKSPACE
from policy.derive import derive_memory
from policy.enums import ToolCallStatus

SAMPLE_FILES = {
    "README.txt": None,
    "sales/2026-q2-orders.csv": 40,
    "sales/2026-q3-orders.csv": 60,
    "support/tickets-november.csv": 30,
}


def test_the_sample_workspace_ships_with_the_application():
    assert Path(__file__).resolve().parents[3] / "dossier" / "workspace" == SAMPLE_WORKSPACE
    assert SAMPLE_WORKSPACE.is_dir()
    # A data folder, not a package: nothing importable may leak into listings.
    assert not (SAMPLE_WORKSPACE / "__init__.py").exists()


@pytest.mark.parametrize(("path", "columns"), [
    ("sales/2026-q2-orders.csv", ["order_id", "region", "product_line", "units", "revenue_eur"]),
    ("sales/2026-q3-orders.csv", ["order_id", "region", "product_line", "units", "revenue_eur"]),
    ("support/tickets-november.csv", ["ticket_id", "opened_on", "customer", "channel", "priority", "status",
                                      "first_response_min", "handle_time_min"]),
])
def test_sample_data_is_well_formed(path, columns):
    rows = list(csv.DictReader(io.StringIO((SAMPLE_WORKSPACE / path).read_text(encoding="utf-8"))))
    assert list(rows[0]) == columns
    assert len(rows) == SAMPLE_FILES[path]
    assert all(all(value.strip() for value in row.values()) for row in rows), "no blank cells"
    if "revenue_eur" in columns:
        # Exact two-decimal money, so sums are exact.
        assert all(Decimal(row["revenue_eur"]).as_tuple().exponent == -2 for row in rows)
        assert len({row["order_id"] for row in rows}) == len(rows)


async def test_list_files_lists_everything_sorted(registry, make_context):
    result = await registry.execute("workspace.list_files", make_context(), {})
    assert result.content_type == "application/json"
    entries = json.loads(result.payload)
    assert [entry["path"] for entry in entries] == sorted(SAMPLE_FILES)
    for entry in entries:
        assert entry["bytes"] == (SAMPLE_WORKSPACE / entry["path"]).stat().st_size
        assert entry.get("rows") == SAMPLE_FILES[entry["path"]]
        assert ("rows" in entry) == entry["path"].endswith(".csv")


@pytest.mark.parametrize(("prefix", "expected"), [
    ("sales/", ["sales/2026-q2-orders.csv", "sales/2026-q3-orders.csv"]),
    ("/support", ["support/tickets-november.csv"]),
    ("sales/2026-q3", ["sales/2026-q3-orders.csv"]),
    ("nothing/", []),
    ("../", []),
])
async def test_list_files_by_prefix(registry, make_context, prefix, expected):
    result = await registry.execute("workspace.list_files", make_context(), {"prefix": prefix})
    assert [entry["path"] for entry in json.loads(result.payload)] == expected


async def test_list_files_skips_hidden_files_and_links_leading_outside(registry, make_context, scratch_workspace):
    (scratch_workspace / ".cache").mkdir()
    (scratch_workspace / ".cache" / "x.csv").write_text("a\n1\n")
    (scratch_workspace / "sales" / ".~lock.csv").write_text("lock")
    os.symlink(scratch_workspace.parent / "secret.csv", scratch_workspace / "sales" / "leak.csv")
    result = await registry.execute("workspace.list_files", make_context(workspace=scratch_workspace), {})
    assert [entry["path"] for entry in json.loads(result.payload)] == sorted(SAMPLE_FILES)


async def test_list_files_without_a_workspace_is_an_execution_error(registry, make_context, tmp_path):
    with pytest.raises(ToolExecutionError, match="missing"):
        await registry.execute("workspace.list_files", make_context(workspace=tmp_path / "gone"), {})


async def test_list_files_summary_names_every_file(registry, make_context):
    """The listing's memory must carry every path and row count: the analyst picks its file from it."""
    arguments: dict = {}
    result = await registry.execute("workspace.list_files", make_context(), arguments)
    spec = registry.get("workspace.list_files").spec
    memory = derive_memory(spec, "art-1", arguments, ToolCallStatus.SUCCEEDED, result.payload,
                           content_type=result.content_type,
                           observed_at=datetime(2026, 11, 30, tzinfo=UTC))
    assert "items: 4 [path|rows] — " in memory.summary
    for path, rows in SAMPLE_FILES.items():
        assert f"{path}|{rows if rows is not None else ''}" in memory.summary


async def test_read_csv_returns_the_exact_bytes(registry, make_context):
    path = "sales/2026-q3-orders.csv"
    result = await registry.execute("workspace.read_csv", make_context(), {"path": path})
    assert result.payload == (SAMPLE_WORKSPACE / path).read_bytes()
    assert result.content_type == "text/csv"


async def test_read_csv_keeps_bytes_it_does_not_understand(registry, make_context, scratch_workspace):
    raw = b"\xef\xbb\xbfname;amount\r\nM\xfcller;1,5\r\n"
    (scratch_workspace / "odd.csv").write_bytes(raw)
    context = make_context(workspace=scratch_workspace)
    result = await registry.execute("workspace.read_csv", context, {"path": "odd.csv"})
    assert result.payload == raw


TRAVERSALS = [
    "../registry.py",
    "../../../pyproject.toml",
    "sales/../../workspace.py",
    "/etc/passwd",
    "sales\\..\\..\\base.py",
    "sales/\x00.csv",
]


@pytest.mark.parametrize("path", TRAVERSALS)
async def test_read_csv_refuses_paths_outside_the_workspace(registry, make_context, path):
    with pytest.raises(ToolArgumentError) as caught:
        await registry.execute("workspace.read_csv", make_context(), {"path": path})
    assert caught.value.retryable is False


async def test_read_csv_refuses_a_symlink_leading_outside(registry, make_context, scratch_workspace):
    os.symlink(scratch_workspace.parent / "secret.csv", scratch_workspace / "sales" / "leak.csv")
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        await registry.execute("workspace.read_csv", make_context(workspace=scratch_workspace),
                               {"path": "sales/leak.csv"})


async def test_read_csv_relative_escape_from_a_scratch_workspace(registry, make_context, scratch_workspace):
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        await registry.execute("workspace.read_csv", make_context(workspace=scratch_workspace),
                               {"path": "../secret.csv"})


@pytest.mark.parametrize(("path", "message"), [
    ("sales/2026-q4-orders.csv", "no file 'sales/2026-q4-orders.csv' in the workspace; use workspace.list_files"),
    ("sales", "is a folder"),
    ("README.txt", "not a CSV file"),
])
async def test_read_csv_missing_or_wrong_files(registry, make_context, path, message):
    with pytest.raises(ToolArgumentError, match=message):
        await registry.execute("workspace.read_csv", make_context(), {"path": path})
