"""The scripts' summary readers read what :mod:`policy.summarise` and :mod:`policy.derive` write.

The readers build their patterns from the writers' constants; these round
trips pin that the two sides agree on real summaries, cut-short ones included.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from activities.providers.scripted.scripts.readings import aggregate, csv_shape, field, listed_files, table
from policy.derive import RESULT_SEPARATOR, derive_memory
from policy.enums import ToolCallStatus
from policy.summarise import json_summary
from policy.tools import ToolSpec

_GROUPS = [{"group": f"g{i}", "sum": f"{i}.50", "rows": i} for i in range(1, 13)]


@pytest.mark.parametrize(("budget", "cut"), [(1500, False), (120, True)])
def test_a_table_reads_back_its_rows_and_how_many_were_left_out(budget, cut):
    summary = json_summary({"total": "78.00", "groups": _GROUPS}, ("total", "groups.group", "groups.sum",
                                                                     "groups.rows"), budget)
    read = aggregate(summary)
    assert read.total == Decimal("78.00")
    shown = len(read.groups)
    assert [(g.name, g.sum, g.rows) for g in read.groups] == [
        (f"g{i}", Decimal(f"{i}.50"), i) for i in range(1, shown + 1)]
    assert read.hidden == len(_GROUPS) - shown
    assert (0 < shown < len(_GROUPS)) is cut
    assert summary.endswith(f" (+{read.hidden} more)") is cut


def test_common_fields_said_once_fill_every_row():
    items = [{"id": i, "owner": "Ann", "state": "open"} for i in range(3)]
    summary = json_summary(items)
    assert "(all owner=Ann, state=open)" in summary
    found = table(summary, "items")
    assert found is not None and found.count == 3
    assert found.rows == tuple({"owner": "Ann", "state": "open", "id": str(i)} for i in range(3))


def test_a_listing_reads_back_paths_and_row_counts_after_the_title():
    listing = [{"path": "README.txt", "bytes": 10}, {"path": "sales/a.csv", "rows": 40, "bytes": 99}]
    line = "workspace.list_files()" + RESULT_SEPARATOR + json_summary(listing, ("path", "rows"), 400)
    assert [(f.path, f.rows) for f in listed_files(line)] == [("README.txt", None), ("sales/a.csv", 40)]


@pytest.mark.parametrize(("data", "expected"), [
    ({"path": "sales/2026-q2-orders.csv"}, "sales/2026-q2-orders.csv"),
    ({"status": "ok", "path": "a.csv"}, "a.csv"),
    ({"path": "b.csv", "note": "x" * 400}, "b.csv"),  # followed by the ``(+1 fields in raw)`` tail
    ({"choice": "none of them"}, None),
])
def test_a_top_level_field_reads_back_whole(data, expected):
    assert field(json_summary(data), "path") == expected


def test_a_csv_summary_reads_back_its_shape_and_sums():
    raw = b"region,units,revenue_eur\nNorth,3,10.50\nSouth,4,20.25\n"
    draft = derive_memory(ToolSpec(name="workspace.read_csv", result_kind="csv"), "a1", {"path": "x.csv"},
                          ToolCallStatus.SUCCEEDED, raw, content_type="text/csv", observed_at=datetime(2026, 1, 1,
                                                                                                       tzinfo=UTC))
    shape = csv_shape(draft.summary)
    assert shape is not None
    assert (shape.rows, shape.columns) == (2, ("region", "units", "revenue_eur"))
    assert shape.sums == {"units": "7", "revenue_eur": "30.75"}
