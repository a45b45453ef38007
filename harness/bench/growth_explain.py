"""EXPLAIN (ANALYZE, BUFFERS) of the candidate queries one assembly runs: which scans they use."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event

from activities.deps import GraphDeps

from harness.bench.growth_graph import LoadedHistory


@dataclass
class ExplainedQuery:
    """One candidate-loading statement under ``EXPLAIN (ANALYZE, BUFFERS)``."""

    label: str
    sql: str
    plan: str
    index_scans: list[str]
    """``"<node> using <index> on <table>"`` for every index-driven node."""
    seq_scans: list[str]
    """Tables read by a Seq Scan."""
    execution_ms: float
    shared_hit: int
    shared_read: int

    @property
    def verdict(self) -> str:
        if self.seq_scans and not self.index_scans:
            return "Seq Scan"
        if self.seq_scans:
            return "Index Scan + Seq Scan"
        return "Index Scan" if self.index_scans else "no table scan"


_SCAN = re.compile(r"(Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\w+)(?: on (\w+))?")
_SEQ = re.compile(r"Seq Scan on (\w+)")
_TABLE = re.compile(r"\bFROM (\w+)", re.IGNORECASE)


def _label(sql: str) -> str:
    low = sql.lower()
    if "with recursive lineage" in low:
        return "lineage (recursive CTE)"
    if "conversations.next_seq" in low:
        return "snapshot seq (conversations)"
    tables = [t for t in _TABLE.findall(sql) if t.lower() not in ("arms", "top")]
    table = tables[0] if tables else "?"
    if table == "messages":
        return "messages: directives (pinned)" if re.search(r"and \(?is_directive", low) else "messages: recent"
    if table == "tool_calls":
        pinned = "or retry_critical" in low
        return "tool_calls: pinned (unresolved/retry-critical)" if pinned else "tool_calls: recent"
    if table == "tool_memories":
        if "union all" not in low:
            return "tool_memories: linked ids"
        return "tool_memories: superseded" if "superseded_seq <=" in low else "tool_memories: live"
    if table == "tool_artifacts":
        return "tool_artifacts: recent" if "union all" in low else "tool_artifacts: cited by memories"
    return table


def _summarise_plan(label: str, sql: str, plan: str) -> ExplainedQuery:
    index_scans = [f"{kind} using {index}" + (f" on {table}" if table else "") for kind, index, table in
                   _SCAN.findall(plan)]
    seq_scans = sorted(set(_SEQ.findall(plan)))
    exec_ms = float(m.group(1)) if (m := re.search(r"Execution Time: ([\d.]+) ms", plan)) else math.nan
    top = next((line for line in plan.splitlines() if "Buffers:" in line), "")
    hit = int(m.group(1)) if (m := re.search(r"hit=(\d+)", top)) else 0
    read = int(m.group(1)) if (m := re.search(r"read=(\d+)", top)) else 0
    return ExplainedQuery(label, sql, plan, index_scans, seq_scans, exec_ms, hit, read)


async def explain_candidate_queries(deps: GraphDeps, loaded: LoadedHistory) -> list[ExplainedQuery]:
    """Capture the SQL of one candidate load and EXPLAIN (ANALYZE, BUFFERS) each SELECT."""
    from store.candidates import load_candidates

    captured: list[tuple[str, Any]] = []

    async with deps.sessions() as session:
        conn = await session.connection()
        sync_engine = conn.sync_engine

        def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, _many: bool) -> None:
            captured.append((statement, parameters))

        event.listen(sync_engine, "before_cursor_execute", capture)
        try:
            await load_candidates(session, loaded.account_id, loaded.conversation_id, loaded.active_branch_id,
                                  deps.limits)
        finally:
            event.remove(sync_engine, "before_cursor_execute", capture)
        out = []
        for statement, parameters in captured:
            if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            result = await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
            plan = "\n".join(row[0] for row in result.all())
            out.append(_summarise_plan(_label(statement), statement, plan))
        await session.rollback()
    return out
