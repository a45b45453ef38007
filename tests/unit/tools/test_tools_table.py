"""``table.aggregate``: exact group sums, checked against an independent computation."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from decimal import Decimal

import pytest

from activities.tools.base import ToolArgumentError
from activities.tools.table import aggregate_csv
from dossier.runtime import SAMPLE_WORKSPACE


def expected_groups(path: str, group_by: str, value: str) -> dict[str, tuple[Decimal, int]]:
    sums: dict[str, Decimal] = defaultdict(Decimal)
    counts: dict[str, int] = defaultdict(int)
    with open(SAMPLE_WORKSPACE / path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            sums[row[group_by]] += Decimal(row[value])
            counts[row[group_by]] += 1
    return {group: (sums[group], counts[group]) for group in sums}


CASES = [
    ("sales/2026-q3-orders.csv", "region", "revenue_eur"),
    ("sales/2026-q3-orders.csv", "product_line", "units"),
    ("sales/2026-q2-orders.csv", "region", "revenue_eur"),
    ("support/tickets-november.csv", "priority", "first_response_min"),
    ("support/tickets-november.csv", "status", "handle_time_min"),
]


@pytest.mark.parametrize(("path", "group_by", "value"), CASES, ids=["-".join(case) for case in CASES])
async def test_aggregate_sums_exactly(registry, make_context, path, group_by, value):
    arguments = {"path": path, "group_by": group_by, "value": value}
    result = await registry.execute("table.aggregate", make_context(), arguments)
    assert result.content_type == "application/json"
    data = json.loads(result.payload)
    assert list(data) == ["path", "group_by", "value", "groups", "total"]
    assert (data["path"], data["group_by"], data["value"]) == (path, group_by, value)
    expected = expected_groups(path, group_by, value)
    assert [g["group"] for g in data["groups"]] == sorted(expected)
    for group in data["groups"]:
        assert isinstance(group["sum"], str)
        assert (Decimal(group["sum"]), group["rows"]) == expected[group["group"]]
    assert Decimal(data["total"]) == sum(total for total, _ in expected.values())
    assert data["total"] == str(sum((Decimal(g["sum"]) for g in data["groups"]), Decimal(0)))


async def test_q3_revenue_by_region_keeps_cents(registry, make_context):
    arguments = {"path": "sales/2026-q3-orders.csv", "group_by": "region", "value": "revenue_eur"}
    data = json.loads((await registry.execute("table.aggregate", make_context(), arguments)).payload)
    assert data["total"] == "458080.39"
    assert sum(group["rows"] for group in data["groups"]) == 60
    assert all(Decimal(group["sum"]).as_tuple().exponent == -2 for group in data["groups"])


@pytest.mark.parametrize(("group_by", "value", "message"), [
    ("country", "revenue_eur",
     "no column 'country'; its columns are order_id, region, product_line, units, revenue_eur"),
    ("region", "profit", "no column 'profit'"),
    ("region", "product_line", "line 2: product_line 'Fleet Telematics' is not a number"),
])
async def test_aggregate_refuses_unknown_or_non_numeric_columns(registry, make_context, group_by, value, message):
    arguments = {"path": "sales/2026-q3-orders.csv", "group_by": group_by, "value": value}
    with pytest.raises(ToolArgumentError, match=message):
        await registry.execute("table.aggregate", make_context(), arguments)


@pytest.mark.parametrize("path", ["../workspace.py", "sales/missing.csv", "/etc/hosts"])
async def test_aggregate_refuses_paths_it_may_not_read(registry, make_context, path):
    with pytest.raises(ToolArgumentError):
        await registry.execute("table.aggregate", make_context(), {"path": path, "group_by": "a", "value": "b"})


@pytest.mark.parametrize(("text", "message"), [
    ("", "has no header row"),
    ("g,v\na,1\nb\n", "line 3 has 1 field"),
    ("g,v\na,NaN\n", "'NaN' is not a number"),
    ("g,v\na,\n", "'' is not a number"),
])
def test_aggregate_csv_errors(text, message):
    with pytest.raises(ToolArgumentError, match=message):
        aggregate_csv(text, "t.csv", "g", "v")


def test_aggregate_csv_edge_cases():
    text = "g,v\nb,1.10\n\na,-0.10\nb,2\n"
    assert aggregate_csv(text, "t.csv", "g", "v") == {
        "path": "t.csv", "group_by": "g", "value": "v",
        "groups": [{"group": "a", "sum": "-0.10", "rows": 1}, {"group": "b", "sum": "3.10", "rows": 2}],
        "total": "3.00",
    }


async def test_aggregate_reads_a_byte_order_mark(registry, make_context, scratch_workspace):
    (scratch_workspace / "bom.csv").write_bytes("\ufeffteam,hours\nops,1.5\nops,2.25\n".encode())
    context = make_context(workspace=scratch_workspace)
    data = json.loads((await registry.execute(
        "table.aggregate", context, {"path": "bom.csv", "group_by": "team", "value": "hours"})).payload)
    assert data["groups"] == [{"group": "ops", "sum": "3.75", "rows": 2}]


async def test_aggregate_refuses_a_file_that_is_not_utf8(registry, make_context, scratch_workspace):
    (scratch_workspace / "latin.csv").write_bytes("team,hours\nM\xfcller,1\n".encode("latin-1"))
    with pytest.raises(ToolArgumentError, match="not UTF-8"):
        await registry.execute("table.aggregate", make_context(workspace=scratch_workspace),
                               {"path": "latin.csv", "group_by": "team", "value": "hours"})
