"""The figures of ``dossier harden``: JSON, the table, and what counts as a failure.

Every figure is an ``int`` measured by a part of the suite, or ``None`` when
that part did not run or could not finish (the JSON says ``null`` and the
table says ``missing``): a figure is never filled in without a measurement.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

FIGURES = (
    "isolation_attempts", "isolation_denied",
    "taint_cases", "taint_violations",
    "injection_payloads", "injection_elevations",
    "faults_injected", "faults_survived",
    "artifacts_lost", "artifacts_duplicated",
    "fuzz_cases", "fuzz_crashes",
    "bad_inputs", "bad_inputs_unclean",
    "retention_sites", "retention_survivors",
    "branch_histories", "branch_violations",
    "untrusted_texts", "untrusted_escapes",
)
"""The figures, in the order of the issue's interface."""

#: Which part measures each figure.
PART_OF = {
    "isolation_attempts": "isolation", "isolation_denied": "isolation",
    "taint_cases": "taint", "taint_violations": "taint",
    "injection_payloads": "injection", "injection_elevations": "injection",
    "faults_injected": "faults", "faults_survived": "faults",
    "artifacts_lost": "faults", "artifacts_duplicated": "faults",
    "fuzz_cases": "fuzz", "fuzz_crashes": "fuzz",
    "bad_inputs": "bad_input", "bad_inputs_unclean": "bad_input",
    "retention_sites": "retention", "retention_survivors": "retention",
    "branch_histories": "branches", "branch_violations": "branches",
    "untrusted_texts": "untrusted", "untrusted_escapes": "untrusted",
}

#: Full-run minimums from the issue's "done when".
FULL_MINIMUMS = {"fuzz_cases": 10_000, "injection_payloads": 200, "faults_injected": 50}


@dataclass
class Figures:
    """The suite's figures plus the findings behind every bad one."""

    values: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(FIGURES))
    findings: list[dict[str, Any]] = field(default_factory=list)
    """One entry per violation: part, what, and a reproducer or detail."""
    errors: dict[str, str] = field(default_factory=dict)
    """Parts that did not finish, with why."""
    seconds: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    """Supporting counts (placements, per-fault outcomes...), never a substitute for a figure."""
    quick: bool = False

    def set(self, **values: int) -> None:
        for name, value in values.items():
            if name not in self.values:
                raise KeyError(name)
            self.values[name] = int(value)

    def finding(self, part: str, what: str, **detail: Any) -> None:
        self.findings.append({"part": part, "what": what, **detail})

    def bad(self) -> dict[str, int]:
        """Every figure that says something is wrong, with how many."""
        v = self.values
        out: dict[str, int] = {}
        if v["isolation_attempts"] is not None and v["isolation_denied"] is not None:
            out["isolation_undenied"] = v["isolation_attempts"] - v["isolation_denied"]
        if v["faults_injected"] is not None and v["faults_survived"] is not None:
            out["faults_not_survived"] = v["faults_injected"] - v["faults_survived"]
        for name in ("taint_violations", "injection_elevations", "artifacts_lost", "artifacts_duplicated",
                     "fuzz_crashes", "bad_inputs_unclean", "retention_survivors",
                     "branch_violations", "untrusted_escapes"):
            if v[name] is not None:
                out[name] = v[name]
        # Crashes found outside the fuzz part (a hostile payload that broke a write) fail the run too.
        for name in ("injection_crashes", "faults_orphaned_objects", "faults_dangling_calls"):
            if self.details.get(name):
                out[name] = self.details[name]
        return {k: n for k, n in out.items() if n}

    def missing(self) -> list[str]:
        return [name for name, value in self.values.items() if value is None]

    def short_of_minimums(self) -> dict[str, tuple[int, int]]:
        """Full-run figures below the issue's minimums: name -> (measured, required)."""
        if self.quick:
            return {}
        return {name: (self.values[name] or 0, need) for name, need in FULL_MINIMUMS.items()
                if self.values[name] is not None and self.values[name] < need}

    def exit_code(self) -> int:
        """0 only when every figure was measured and none is bad; 1 for a violation; 2 for a gap."""
        if self.bad():
            return 1
        if self.missing() or self.errors or self.short_of_minimums():
            return 2
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            **self.values,
            "ok": self.exit_code() == 0,
            "quick": self.quick,
            "bad": self.bad(),
            "missing": self.missing(),
            "errors": self.errors,
            "seconds": {k: round(s, 1) for k, s in self.seconds.items()},
            "details": self.details,
            "findings": self.findings,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=str)


def format_table(figures: Figures, *, markdown: bool = False) -> str:
    """The figures as a table: one row per figure with its part and a verdict."""
    bad = figures.bad()
    bad_names = set(bad)
    if "isolation_undenied" in bad:
        bad_names.add("isolation_denied")
    if "faults_not_survived" in bad:
        bad_names.add("faults_survived")
    minimums = figures.short_of_minimums()
    rows = []
    for name in FIGURES:
        value = figures.values[name]
        shown = "missing" if value is None else f"{value:,}"
        verdict = ("MISSING" if value is None else "FAIL" if name in bad_names
                   else f"BELOW {minimums[name][1]:,}" if name in minimums else "ok")
        rows.append((name, PART_OF[name], shown, verdict))
    # Failures found outside their own figure (a crash in the injection part, orphaned objects).
    for name in ("injection_crashes", "faults_orphaned_objects", "faults_dangling_calls"):
        if name in figures.details:
            count = figures.details[name]
            rows.append((f"({name})", name.split("_", 1)[0], f"{count:,}", "FAIL" if count else "ok"))
    if markdown:
        lines = ["| figure | part | value | verdict |", "|---|---|---:|---|"]
        lines += [f"| `{n}` | {p} | {v} | {verdict} |" for n, p, v, verdict in rows]
    else:
        lines = [f"{'figure':<26} {'part':<10} {'value':>10}  verdict", "-" * 58]
        lines += [f"{n:<26} {p:<10} {v:>10}  {verdict}" for n, p, v, verdict in rows]
    tail = []
    for part, error in figures.errors.items():
        tail.append(f"part {part} did not finish: {error}")
    for finding in figures.findings[:50]:
        detail = ", ".join(f"{k}={v!r}"[:200] for k, v in finding.items() if k not in ("part", "what"))
        tail.append(f"{finding['part'].upper()}: {finding['what']}" + (f" ({detail})" if detail else ""))
    if len(figures.findings) > 50:
        tail.append(f"... and {len(figures.findings) - 50} more findings (see the JSON)")
    verdict = {0: "PASS", 1: "FAIL: violations", 2: "INCOMPLETE: missing figures"}[figures.exit_code()]
    seconds = ", ".join(f"{k} {s:.0f}s" for k, s in figures.seconds.items())
    summary = f"{'quick' if figures.quick else 'full'} run: {verdict}" + (f" ({seconds})" if seconds else "")
    if markdown:
        return "\n".join([f"# dossier harden\n\n{summary}\n", *lines, "", *(f"- {t}" for t in tail)]) + "\n"
    return "\n".join([*lines, "", summary, *tail])
