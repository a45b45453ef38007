"""Part 3: the seventeen seed scenarios through every strategy.

Each scenario is written into the graph once (through the live capture and
derivation code) and assembled by Dossier; the peers get the same call's
full transcript replay (what their frameworks would hold) and build their
context from it with their own code. Every context is scored on the
scenario's required and forbidden facts, and each forbidden fact that leaks
is filed under the kind of leak its scenario tests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.deps import GraphDeps
from harness.bench.scenario_rows import Row, format_markdown, scenario_row
from harness.bench.strategy import CallInput, ContextStrategy, FullReplay, count_tokens, message_text
from harness.scenarios import all_scenarios
from harness.scenarios.runner import context_text, run_scenario

LEAK_KINDS: dict[str, str] = {
    "google_derived_route": "privacy (provider route)",
    "participant_visibility": "other participant",
    "autonomous_discussion_attribution": "other participant",
    "subagent_child_artifact_capture": "unpromoted child state",
    "subagent_parent_resume": "unpromoted child state",
    "subagent_continuation_state": "unpromoted child state",
    "branch_isolation": "sibling branch",
    "branch_send": "sibling branch",
    "stale_connected_app_memory": "stale as current",
    "contradiction_and_supersession": "superseded",
    "broken_provenance_repair": "unverifiable evidence",
}
"""What a forbidden fact in each scenario stands for; the rest are raw noise ('raw payload')."""


@dataclass(frozen=True)
class Cell:
    """One scenario under one strategy."""

    tokens: int
    required_total: int
    required_missing: list[str]
    forbidden_present: list[str]

    @property
    def kept(self) -> str:
        """``kept/total``."""
        return f"{self.required_total - len(self.required_missing)}/{self.required_total}"


@dataclass
class MatrixReport:
    """Scenario × strategy cells, plus each strategy's parameters."""

    strategies: list[str]
    parameters: dict[str, dict[str, Any]]
    rows: dict[str, dict[str, Cell]] = field(default_factory=dict)
    dossier: dict[str, Row] = field(default_factory=dict)
    """Per scenario: Dossier's reduction against legacy replay (final call, assembled afresh)."""

    def leaks_by_kind(self) -> dict[str, dict[str, int]]:
        """Per strategy: forbidden facts leaked, counted by kind of leak."""
        out: dict[str, dict[str, int]] = {name: {} for name in self.strategies}
        for scenario, cells in self.rows.items():
            kind = LEAK_KINDS.get(scenario, "raw payload")
            for name, cell in cells.items():
                if cell.forbidden_present:
                    out[name][kind] = out[name].get(kind, 0) + len(cell.forbidden_present)
        return out

    def to_json(self) -> dict[str, Any]:
        """Every cell and the strategies' parameters."""
        return {
            "parameters": self.parameters,
            "scenarios": {
                scenario: {name: {"tokens": c.tokens, "required_total": c.required_total,
                                  "required_missing": c.required_missing, "forbidden_present": c.forbidden_present}
                           for name, c in cells.items()}
                for scenario, cells in self.rows.items()
            },
            "leaks_by_kind": self.leaks_by_kind(),
            "dossier_reduction": {scenario: row.to_json() for scenario, row in self.dossier.items()},
        }

    def to_markdown(self) -> str:
        """Tokens / required kept / forbidden leaked per scenario and strategy, then leaks by kind."""
        head = "| scenario | " + " | ".join(self.strategies) + " |"
        lines = [
            "Each cell: tokens · required facts kept · forbidden facts leaked. Required facts that cite "
            "Dossier's own record ids are left out for every strategy, Dossier included.", "",
            head, "|---|" + "---:|" * len(self.strategies),
        ]
        for scenario, cells in self.rows.items():
            lines.append(f"| {scenario} | " + " | ".join(
                f"{cells[name].tokens:,} · {cells[name].kept} · {len(cells[name].forbidden_present)}"
                for name in self.strategies) + " |")
        totals = []
        for name in self.strategies:
            cells = [row[name] for row in self.rows.values()]
            missing = sum(len(c.required_missing) for c in cells)
            leaked = sum(len(c.forbidden_present) for c in cells)
            totals.append(f"**{sum(c.tokens for c in cells):,} · −{missing} · {leaked}**")
        lines.append("| **all** | " + " | ".join(totals) + " |")
        lines += ["", "Forbidden facts leaked, by kind of leak:", "",
                  "| strategy | " + " | ".join(sorted({k for k in LEAK_KINDS.values()} | {"raw payload"})) + " |",
                  "|---|" + "---:|" * (len(set(LEAK_KINDS.values())) + 1)]
        kinds = sorted(set(LEAK_KINDS.values()) | {"raw payload"})
        for name, counts in self.leaks_by_kind().items():
            lines.append(f"| {name} | " + " | ".join(str(counts.get(kind, 0)) for kind in kinds) + " |")
        if self.dossier:
            lines += ["", "Dossier alone, scored on every fact (those citing its record ids too): the final "
                      "call's assembly (the scenario's first call of its participant, so assembled afresh) "
                      "against legacy replay of the same call, as the assembly record counts both.", "",
                      format_markdown(list(self.dossier.values()))]
        return "\n".join(lines)


_PAIRS = re.compile(r"^\w+=[^,=]+(, \w+=[^,=]+)*$")


def _present(fact: str, text: str) -> bool:
    """Whether ``fact`` is in ``text``, reading ``key=value`` facts in raw JSON form too.

    Dossier's summaries write fields as ``subject=...``; a strategy that keeps
    the raw result holds ``"subject": "..."`` instead, which carries the same
    fact and must count.
    """
    if fact in text:
        return True
    if not _PAIRS.match(fact):
        return False
    for pair in fact.split(", "):
        key, value = pair.split("=", 1)
        if not any(form in text for form in (pair, f'"{key}": "{value}"', f'"{key}": {value}', f"'{key}': '{value}'")):
            return False
    return True


def _score(text: str, required: Sequence[str], forbidden: Sequence[str]) -> tuple[list[str], list[str]]:
    return [fact for fact in required if not _present(fact, text)], [fact for fact in forbidden if fact in text]


async def run_matrix(deps: GraphDeps, peers: Sequence[ContextStrategy], names: Sequence[str] | None = None
                     ) -> MatrixReport:
    """Every scenario through Dossier, full replay and ``peers``.

    Peers that take a token budget get Dossier's assembled token count for
    that scenario, so they are compared at equal spend.
    """
    strategies: list[ContextStrategy] = [FullReplay(), *peers]
    report = MatrixReport(
        strategies=["dossier", *(s.name for s in strategies)],
        parameters={"dossier": {"policy": deps.policy.version_tag}, **{s.name: s.parameters for s in strategies}},
    )
    counter = deps.counter
    for scenario in all_scenarios():
        if names and scenario.name not in names:
            continue
        outcome = await run_scenario(scenario, deps)
        # Facts that cite Dossier's own record ids ("[m:...]") cannot exist in a peer's context:
        # every strategy, Dossier included, is scored on the id-free facts only.
        required = [fact for raw, fact in zip(scenario.required, outcome.required, strict=True) if "{" not in raw]
        dossier_text = context_text(outcome.messages)
        missing, leaked = _score(dossier_text, required, outcome.forbidden)
        cells: dict[str, Cell] = {"dossier": Cell(outcome.assembled_tokens, len(required), missing, leaked)}
        report.dossier[scenario.name] = scenario_row(outcome)
        replay = [message.to_openai() for message in outcome.legacy]
        for strategy in strategies:
            context = strategy.context(CallInput(messages=replay, token_budget=outcome.assembled_tokens))
            text = "\n".join(message_text(message) for message in context)
            missing, leaked = _score(text, required, outcome.forbidden)
            cells[strategy.name] = Cell(count_tokens(context, counter), len(required), missing, leaked)
        report.rows[scenario.name] = cells
    return report


__all__ = ["LEAK_KINDS", "Cell", "MatrixReport", "context_text", "run_matrix"]
