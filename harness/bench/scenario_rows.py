"""Dossier alone on a seed scenario: its reduction against legacy replay, scored on every fact.

One row type and one Markdown table for ``dossier bench scenarios`` and the
scenarios part of the benchmark suite.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.scenarios.runner import ScenarioOutcome


@dataclass(frozen=True)
class Row:
    """One scenario's benchmark result."""

    name: str
    legacy_tokens: int
    assembled_tokens: int
    required_total: int
    required_missing: list[str]
    forbidden_present: list[str]
    assembly_id: str
    policy_version: str
    graph_query_ms: float
    policy_ms: float
    serialise_ms: float

    @property
    def reduction(self) -> float:
        """1 - assembled / legacy."""
        return 1 - self.assembled_tokens / self.legacy_tokens if self.legacy_tokens else 0.0

    @property
    def ok(self) -> bool:
        """Every required fact present, no forbidden one."""
        return not self.required_missing and not self.forbidden_present

    def to_json(self) -> dict[str, object]:
        """The issue's interface keys first, then the extras."""
        return {
            "name": self.name,
            "legacy_tokens": self.legacy_tokens,
            "assembled_tokens": self.assembled_tokens,
            "required_total": self.required_total,
            "required_missing": self.required_missing,
            "forbidden_present": self.forbidden_present,
            "reduction": round(self.reduction, 4),
            "assembly_id": self.assembly_id,
            "policy_version": self.policy_version,
            "timings_ms": {"graph_query": self.graph_query_ms, "policy": self.policy_ms,
                           "serialise": self.serialise_ms},
        }


def scenario_row(outcome: ScenarioOutcome) -> Row:
    """Dossier alone on one scenario, scored on every fact."""
    return Row(
        name=outcome.name,
        legacy_tokens=outcome.legacy_tokens,
        assembled_tokens=outcome.assembled_tokens,
        required_total=len(outcome.required),
        required_missing=outcome.required_missing,
        forbidden_present=outcome.forbidden_present,
        assembly_id=outcome.assembly_id,
        policy_version=outcome.record.policy_version,
        graph_query_ms=outcome.timings.graph_query_ms,
        policy_ms=outcome.timings.policy_ms,
        serialise_ms=outcome.timings.serialise_ms,
    )


def format_markdown(rows: list[Row]) -> str:
    """The benchmark as Markdown table rows (header included) plus a summary line."""
    lines = [
        "| scenario | legacy replay | Dossier | reduction | required kept | forbidden leaked |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        kept = f"{row.required_total - len(row.required_missing)}/{row.required_total}"
        lines.append(f"| {row.name} | {row.legacy_tokens:,} | {row.assembled_tokens:,} | {row.reduction:.1%} "
                     f"| {kept} | {len(row.forbidden_present)} |")
    if rows:
        legacy = sum(r.legacy_tokens for r in rows)
        assembled = sum(r.assembled_tokens for r in rows)
        lines.append(f"| **all {len(rows)}** | **{legacy:,}** | **{assembled:,}** | **{1 - assembled / legacy:.1%}** | | |")
        reductions = [r.reduction for r in rows]
        lines.append("")
        lines.append(f"Median {statistics.median(reductions):.1%}, min {min(reductions):.1%}, "
                     f"max {max(reductions):.1%}.")
    return "\n".join(lines)


__all__ = ["Row", "format_markdown", "scenario_row"]
