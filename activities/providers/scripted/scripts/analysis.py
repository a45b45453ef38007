"""Data scripts: ``analyst``, ``researcher`` (a subagent child) and ``digest`` (a scheduled job).

All three work the same table pipeline, one tool call per model call:
find the file, read it, aggregate it, and (analyst, researcher) write a
Markdown file, then answer citing the memories each fact came from. Every
number in an answer or a report is copied from a memory summary in the
context; none is computed from data the context does not hold, except
averages derived from a sum and a count shown side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import PurePosixPath

from activities.providers.scripted.context import Progress
from activities.providers.scripted.scripts.readings import Aggregate, CsvShape, aggregate, csv_shape, listed_files, pick_column
from activities.providers.scripted.scripts.steps import CSV_PATH, Reply, Turn, advance, best_path, slug

DEFAULT_TASK_FILE = "sales/2026-q3-orders.csv"
"""What the researcher reads when its task names no file."""
DEFAULT_TICKETS_FILE = "support/tickets-november.csv"
GROUP_COLUMNS = ("region", "product_line", "priority", "status", "channel", "customer")
"""Columns worth grouping by, in order of preference."""
VALUE_COLUMNS = ("revenue_eur", "amount", "first_response_min", "handle_time_min", "units")
"""Columns worth summing, in order of preference."""

_BY_COLUMN = re.compile(r"\bby ([a-z][a-z0-9_]*)", re.IGNORECASE)


@dataclass(frozen=True)
class Findings:
    """A file read and aggregated: everything an answer or a report quotes."""

    path: str
    read: Progress
    shape: CsvShape | None
    group_by: str
    value: str
    aggregated: Progress
    table: Aggregate


def _analyse(turn: Turn, path: str, hint: str) -> Reply | Findings:
    """Read ``path`` and aggregate it, one step per call; the findings once both are in view."""
    view = turn.view
    read = view.progress("workspace.read_csv", path=path)
    if (reply := advance(turn, read, "workspace.read_csv", {"path": path}, f"read {path}")) is not None:
        return reply
    shape = csv_shape(read.memory.result) if read.memory else None
    columns = shape.columns if shape else ()
    asked = [word for word in _BY_COLUMN.findall(hint) if word in columns]
    group_by = asked[0] if asked else pick_column(columns, GROUP_COLUMNS, "region")
    numeric = tuple(shape.sums) if shape else ()
    value = pick_column(numeric, VALUE_COLUMNS, numeric[-1] if numeric else "revenue_eur")
    arguments = {"path": path, "group_by": group_by, "value": value}
    aggregated = view.progress("table.aggregate", **arguments)
    if (reply := advance(turn, aggregated, "table.aggregate", arguments, f"sum {value} by {group_by}")) is not None:
        return reply
    if aggregated.memory is None:
        return Reply(text=f"table.aggregate ran {aggregated.cite}, but its result is not in my context, "
                          "so I cannot quote the totals.")
    return Findings(path, read, shape, group_by, value, aggregated, aggregate(aggregated.memory.result))


def _report(findings: Findings) -> str:
    """A short Markdown report built from the aggregate memory."""
    table = findings.table
    lines = [
        f"# {findings.value} by {findings.group_by}",
        "",
        f"Source file: `{findings.path}`"
        + (f" ({findings.shape.rows} rows)." if findings.shape else "."),
        "",
        f"| {findings.group_by} | {findings.value} | rows |",
        "|---|---:|---:|",
    ]
    lines += [f"| {g.name} | {g.sum} | {'' if g.rows is None else g.rows} |" for g in table.groups]
    if table.hidden:
        lines.append(f"| (+{table.hidden} more, see the aggregate) | | |")
    lines.append(f"| **total** | **{table.total}** | {table.rows or ''} |")
    lines += ["", f"Figures from workspace.read_csv {findings.read.cite} and table.aggregate "
                  f"{findings.aggregated.cite}."]
    return "\n".join(lines) + "\n"


def _extremes(table: Aggregate) -> str:
    if not table.groups:
        return "no groups were shown"
    ranked = sorted(table.groups, key=lambda g: (-g.sum, g.name))
    top, low = ranked[0], ranked[-1]
    rows = f" ({top.rows} rows)" if top.rows is not None else ""
    text = f"largest {top.name} {top.sum}{rows}"
    return text if top == low else f"{text}, smallest {low.name} {low.sum}"


def _write(turn: Turn, findings: Findings, name: str) -> Reply | Progress:
    """Write ``name`` with the report, or the file's progress once its handle is in view."""
    written = turn.view.file_progress(name)
    reply = advance(turn, written, "files.write", {"name": name, "content": _report(findings)}, f"save {name}")
    return reply if reply is not None else written


def _handle(written: Progress) -> str:
    memory = written.memory
    if memory is None or memory.file_name is None:
        return f"it was saved {written.cite}, but its handle is not in my context"
    size = f", {memory.file_bytes} bytes" if memory.file_bytes is not None else ""
    place = f" at {memory.file_uri}" if memory.file_uri else ""
    return f"{memory.file_name}{size}{place} {memory.cite}"


# --------------------------------------------------------------------------- analyst


def analyst(turn: Turn) -> Reply:
    """List files, read the best-matching CSV, aggregate it, write a report, answer with citations."""
    view = turn.view
    # Newest first: a follow-up ("try again") leans on the request before it.
    request = "\n".join(view.user_texts())
    listing = view.progress("workspace.list_files")
    if (reply := advance(turn, listing, "workspace.list_files", {}, "list your files")) is not None:
        return reply
    listed = [f.path for f in listed_files(listing.memory.result)] if listing.memory else []
    csvs = [path for path in listed if path.lower().endswith(".csv")] or CSV_PATH.findall(request)
    path = best_path(csvs, view.user_texts())
    if path is None:
        return Reply(text=f"I found no CSV file in your workspace listing {listing.cite}.")
    findings = _analyse(turn, path, request)
    if isinstance(findings, Reply):
        return findings
    name = f"{PurePosixPath(path).stem}-{slug(findings.value)}-by-{slug(findings.group_by)}.md"
    written = _write(turn, findings, name)
    if isinstance(written, Reply):
        return written
    table = findings.table
    shape = f" ({findings.shape.rows} rows)" if findings.shape else ""
    return Reply(text=(
        f"From your workspace listing {listing.cite} I read {path} {findings.read.cite}{shape} "
        f"and summed {findings.value} by {findings.group_by} "
        f"{findings.aggregated.cite}: total {table.total}; {_extremes(table)}. "
        f"The report is {_handle(written)}."
    ))


# --------------------------------------------------------------------------- researcher


def researcher(turn: Turn) -> Reply:
    """A subagent: read the file its task names, aggregate it, write findings, report in one paragraph."""
    task = turn.view.latest_user_text()
    named = CSV_PATH.findall(task)
    path = named[0] if named else DEFAULT_TASK_FILE
    findings = _analyse(turn, path, task)
    if isinstance(findings, Reply):
        return findings
    name = f"{PurePosixPath(path).stem}-findings.md"
    written = _write(turn, findings, name)
    if isinstance(written, Reply):
        return written
    table = findings.table
    groups = "; ".join(f"{g.name} {g.sum}" for g in table.groups)
    more = f" (+{table.hidden} more)" if table.hidden else ""
    return Reply(text=(
        f"Findings for {path} {findings.read.cite}: {findings.value} total {table.total} "
        f"by {findings.group_by} {findings.aggregated.cite}: {groups}{more}. "
        f"Table saved as {_handle(written)}."
    ))


# --------------------------------------------------------------------------- digest


def _average(total: Decimal, rows: int | None) -> str:
    return "n/a" if not rows else str((total / rows).quantize(Decimal("0.1")))


def digest(turn: Turn) -> Reply:
    """A scheduled job: list files, aggregate the support tickets, answer with a one-paragraph digest."""
    view = turn.view
    request = view.latest_user_text()
    listing = view.progress("workspace.list_files")
    if (reply := advance(turn, listing, "workspace.list_files", {}, "list the workspace")) is not None:
        return reply
    listed = [f.path for f in listed_files(listing.memory.result)] if listing.memory else []
    tickets = [path for path in listed if "ticket" in path.lower() and path.lower().endswith(".csv")]
    path = best_path(tickets, view.user_texts()) or DEFAULT_TICKETS_FILE
    group_by = "status" if "status" in request.lower() else "priority"
    value = "first_response_min"
    arguments = {"path": path, "group_by": group_by, "value": value}
    aggregated = view.progress("table.aggregate", **arguments)
    if (reply := advance(turn, aggregated, "table.aggregate", arguments, f"group {path} by {group_by}")) is not None:
        return reply
    if aggregated.memory is None:
        return Reply(text=f"The aggregate ran {aggregated.cite}, but its result is not in my context.")
    table = aggregate(aggregated.memory.result)
    parts = [
        f"{g.name} {g.rows if g.rows is not None else '?'} ticket(s), avg {value} {_average(g.sum, g.rows)}"
        for g in table.groups
    ]
    averages = {g.name: g.sum / g.rows for g in table.groups if g.rows}
    slowest = max(averages, key=lambda name: (averages[name], name)) if averages else None
    count = f"{table.rows} tickets" if table.rows is not None else "tickets"
    tail = f"; the slowest average is {slowest}" if slowest is not None else ""
    return Reply(text=(
        f"Support digest for {path} (listed in {listing.cite}, aggregated in {aggregated.cite}): "
        f"{count} by {group_by}: {'; '.join(parts)}. Total {value} {table.total}{tail}."
    ))


__all__ = ["DEFAULT_TASK_FILE", "DEFAULT_TICKETS_FILE", "analyst", "digest", "researcher"]
