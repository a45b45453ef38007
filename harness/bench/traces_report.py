"""Per-call results of the traces benchmark and their aggregation (JSON, Markdown)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.bench.billing import PRICE_MODELS, Bill, summarise_bills
from policy.epochs import (
    BREAK_EVEN,
    COLD_CACHE,
    EPOCH_CONTINUED,
    OVER_BUDGET,
    OVER_GROWTH,
    PREFIX_CHANGED,
    RESTART_PREFIXES,
)
from policy.validate import problem_rule

LAST_CALL_MIN_CALLS = 8
"""Last-call medians are over trajectories with at least this many model calls."""


@dataclass(frozen=True)
class RefOutcome:
    """One reference at one call under one strategy."""

    value: str
    kind: str
    """``tool`` (carried) or ``user``."""
    strict: bool
    kept: bool
    reason: str | None = None
    """Why it was lost (``None`` when kept)."""


@dataclass
class StrategyCall:
    """One strategy's context at one model call."""

    prompt_tokens: int
    history_tokens: int
    refs: list[RefOutcome]
    bills: dict[str, Bill] = field(default_factory=dict)
    """What the call costs under each price model (:data:`harness.bench.billing.PRICE_MODELS`)."""
    invalid: list[str] = field(default_factory=list)
    """Why the message list would be refused by OpenAI's or Anthropic's API (empty: valid)."""
    epoch: str | None = None
    """Dossier's epoch decision at this call, as a class (:func:`epoch_class`); ``None`` for the others."""


@dataclass
class CallRow:
    """Model call *k* of one trajectory, under every strategy."""

    trajectory: str
    source: str
    call: int
    calls_in_trajectory: int
    strategies: dict[str, StrategyCall] = field(default_factory=dict)
    assembly_id: str = ""
    """The persisted ContextAssembly of Dossier's default-policy context (for audit)."""

    def add(self, name: str, prompt_tokens: int, system_tokens: int, refs: list[RefOutcome],
            invalid: list[str] | None = None) -> None:
        """Record a strategy; history = prompt minus the (unchanged) system prompt."""
        self.strategies[name] = StrategyCall(prompt_tokens, max(0, prompt_tokens - system_tokens), refs,
                                             invalid=list(invalid or ()))

    def to_json(self) -> dict[str, Any]:
        """Flat per-call data (for plots)."""
        return {
            "trajectory": self.trajectory, "source": self.source, "call": self.call,
            "calls_in_trajectory": self.calls_in_trajectory, "assembly_id": self.assembly_id,
            "strategies": {
                name: {"prompt_tokens": s.prompt_tokens, "history_tokens": s.history_tokens,
                       "tool_refs": sum(r.kind == "tool" for r in s.refs),
                       "tool_refs_kept": sum(r.kind == "tool" and r.kept for r in s.refs),
                       "user_refs": sum(r.kind == "user" for r in s.refs),
                       "user_refs_kept": sum(r.kind == "user" and r.kept for r in s.refs)}
                for name, s in self.strategies.items()
            },
        }


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _recall(outcomes: list[RefOutcome]) -> float | None:
    return round(sum(o.kept for o in outcomes) / len(outcomes), 4) if outcomes else None


LONG_TRAJECTORY_CALLS = 16
"""Billed-cost ratios are also reported over trajectories with at least this many model calls."""


def billed(rows: list[CallRow], name: str) -> dict[str, dict[str, float | None]]:
    """Per price model: billed input cost as a ratio to cached full replay, cache hit rate, uncached tokens."""
    out: dict[str, dict[str, float | None]] = {}
    long = [row for row in rows if row.calls_in_trajectory >= LONG_TRAJECTORY_CALLS]
    for model in PRICE_MODELS:
        bills = [row.strategies[name].bills[model] for row in rows if model in row.strategies[name].bills]
        if not bills:
            continue

        def ratio(subset: list[CallRow]) -> float | None:
            cost = sum(row.strategies[name].bills[model].cost for row in subset)
            replay = sum(row.strategies["full_replay"].bills[model].cost for row in subset)
            return round(cost / replay, 4) if replay else None

        totals = summarise_bills(bills)
        out[model] = {
            "cost_ratio_vs_cached_replay": ratio(rows),
            "cost_ratio_vs_cached_replay_16plus": ratio(long),
            "cache_hit_rate": totals["cache_hit_rate"],
            "uncached_tokens_per_call_median": totals["uncached_tokens_per_call_median"],
        }
    return out


LENGTH_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1–7", 1, 7), ("8–15", 8, 15), ("16–31", 16, 31), ("32–63", 32, 63), ("64+", 64, None))
"""Trajectory length buckets, by model calls: where along a run a saving or a loss sits."""


def length_bucket(calls: int) -> str:
    """The :data:`LENGTH_BUCKETS` label of a trajectory with ``calls`` model calls."""
    for label, low, high in LENGTH_BUCKETS:
        if calls >= low and (high is None or calls <= high):
            return label
    return LENGTH_BUCKETS[0][0]


def by_length(rows: list[CallRow], name: str) -> dict[str, dict[str, Any]]:
    """Per length bucket that has rows: trajectories, calls, billed ratios and recall of ``name``."""
    out: dict[str, dict[str, Any]] = {}
    for label, _, _ in LENGTH_BUCKETS:
        subset = [row for row in rows if length_bucket(row.calls_in_trajectory) == label]
        if not subset:
            continue
        refs = [r for row in subset for r in row.strategies[name].refs]
        tool = [r for r in refs if r.kind == "tool"]
        out[label] = {
            "trajectories": len({row.trajectory for row in subset}),
            "calls": len(subset),
            "cost_ratio_vs_cached_replay": {model: entry["cost_ratio_vs_cached_replay"]
                                            for model, entry in billed(subset, name).items()},
            "tool_refs": len(tool),
            "tool_ref_recall": _recall(tool),
            "tool_ref_recall_strict": _recall([r for r in tool if r.strict]),
            "user_refs": sum(r.kind == "user" for r in refs),
            "user_ref_recall": _recall([r for r in refs if r.kind == "user"]),
        }
    return out


def epoch_class(started: bool, reason: str) -> str:
    """An epoch decision's reason as a class: ``continued``, or why the epoch started (ids and sizes left out).

    ``prefix changed (changed: memory:…; new: message:…)`` becomes ``prefix changed: changed memory``
    (its first part and that part's first record kind); a budget restart is ``budget``.
    The reasons' openings are :data:`policy.epochs.RESTART_PREFIXES`; any other reason (the first call,
    a policy or route change) is cut before its first variable part.
    """
    if not started:
        return EPOCH_CONTINUED
    if reason.startswith(PREFIX_CHANGED):
        label, _, refs = reason[len(PREFIX_CHANGED):].split(";")[0].partition(": ")
        return f"prefix changed: {label} {refs.split(':')[0]}" if refs else "prefix changed: order"
    opening = next((p for p in RESTART_PREFIXES if reason.startswith(p)), None)
    if opening is not None:
        return _SHORT_CLASS.get(opening, opening)
    return reason.split(" (")[0].split(" from ")[0]


_SHORT_CLASS = {OVER_BUDGET: "budget", OVER_GROWTH: "epoch_growth_tokens", BREAK_EVEN: "break-even",
                COLD_CACHE: "cold cache"}


def epoch_costs(rows: list[CallRow], name: str, model: str = "anthropic") -> dict[str, dict[str, float | int]]:
    """Where ``name``'s billed cost goes, by epoch decision class: calls, cost share, tokens written and read.

    Empty when the strategy records no epochs. ``cost_share`` is the class's part of the strategy's
    billed cost under ``model``; ``written_share`` its part of the tokens written to the cache.
    """
    calls = [row.strategies[name] for row in rows if row.strategies[name].epoch is not None]
    if not calls or model not in calls[0].bills:
        return {}
    groups: dict[str, list[StrategyCall]] = defaultdict(list)
    for call in calls:
        groups[call.epoch or ""].append(call)
    cost = {label: sum(c.bills[model].cost for c in mine) for label, mine in groups.items()}
    total_cost = sum(cost.values()) or 1.0
    total_written = sum(c.bills[model].written for c in calls) or 1
    return {
        label: {
            "calls": len(groups[label]),
            "cost_share": round(cost[label] / total_cost, 4),
            "written_share": round(sum(c.bills[model].written for c in groups[label]) / total_written, 4),
            "tokens_per_call_mean": round(sum(c.prompt_tokens for c in groups[label]) / len(groups[label]), 1),
        }
        for label in sorted(groups, key=lambda label: -cost[label])
    }


def summarise(rows: list[CallRow], name: str) -> dict[str, Any]:
    """The aggregate keys for strategy ``name`` over ``rows``."""
    tool = [r for row in rows for r in row.strategies[name].refs if r.kind == "tool"]
    user = [r for row in rows for r in row.strategies[name].refs if r.kind == "user"]
    last = [row for row in rows if row.call == row.calls_in_trajectory - 1
            and row.calls_in_trajectory >= LAST_CALL_MIN_CALLS]
    full = "full_replay"
    return {
        "calls": len(rows),
        "tool_refs": len(tool),
        "tool_ref_recall": _recall(tool),
        "tool_refs_strict": sum(r.strict for r in tool),
        "tool_ref_recall_strict": _recall([r for r in tool if r.strict]),
        "user_refs": len(user),
        "user_ref_recall": _recall(user),
        "history_token_ratio_median": _median(
            _ratio(row.strategies[name].history_tokens, row.strategies[full].history_tokens) for row in rows),
        "prompt_token_ratio_median": _median(
            _ratio(row.strategies[name].prompt_tokens, row.strategies[full].prompt_tokens) for row in rows),
        "prompt_tokens_total_ratio": round(_ratio(
            sum(row.strategies[name].prompt_tokens for row in rows),
            sum(row.strategies[full].prompt_tokens for row in rows)) or 0, 4),
        "last_call_trajectories": len(last),
        "last_call_history_token_ratio_median": _median(
            _ratio(row.strategies[name].history_tokens, row.strategies[full].history_tokens) for row in last),
        "last_call_prompt_token_ratio_median": _median(
            _ratio(row.strategies[name].prompt_tokens, row.strategies[full].prompt_tokens) for row in last),
        "invalid_message_lists": sum(bool(row.strategies[name].invalid) for row in rows),
        "billed": billed(rows, name),
    }


def worst(rows: list[CallRow], name: str, n: int = 5) -> list[dict[str, Any]]:
    """The ``n`` trajectories that lost the most carried and user references, with reasons."""
    lost: dict[str, list[dict[str, Any]]] = defaultdict(list)
    total: dict[str, int] = defaultdict(int)
    for row in rows:
        for ref in row.strategies[name].refs:
            total[row.trajectory] += 1
            if not ref.kept:
                lost[row.trajectory].append({"call": row.call, "value": ref.value, "kind": ref.kind,
                                             "strict": ref.strict, "reason": ref.reason})
    ranked = sorted(lost, key=lambda t: (-len(lost[t]), -len(lost[t]) / total[t], t))[:n]
    return [{"trajectory": t, "refs": total[t], "lost": len(lost[t]), "losses": lost[t]} for t in ranked]


def loss_reasons(rows: list[CallRow], name: str) -> dict[str, int]:
    """How many lost references each reason accounts for (reason text up to the first parenthesis)."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for ref in row.strategies[name].refs:
            if not ref.kept:
                counts[(ref.reason or "").split(" (", 1)[0]] += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


@dataclass
class TracesReport:
    """The traces benchmark's result."""

    rows: list[CallRow]
    parameters: dict[str, Any]
    trajectories: int
    seconds: float
    path: str
    account_id: str = ""
    """The account the run wrote into."""

    @property
    def strategies(self) -> list[str]:
        return list(self.rows[0].strategies) if self.rows else []

    def sources(self) -> list[str]:
        return sorted({row.source for row in self.rows})

    def to_json(self) -> dict[str, Any]:
        """One object keyed by strategy name (``dossier`` is Dossier's default policy)."""
        out: dict[str, Any] = {}
        for name in self.strategies:
            entry = summarise(self.rows, name)
            entry["by_source"] = {s: summarise([r for r in self.rows if r.source == s], name) for s in self.sources()}
            entry["by_length"] = by_length(self.rows, name)
            entry["loss_reasons"] = loss_reasons(self.rows, name)
            epochs = epoch_costs(self.rows, name)
            if epochs:
                long = [r for r in self.rows if r.calls_in_trajectory >= LONG_TRAJECTORY_CALLS]
                entry["epochs"] = {"all": epochs, "16plus": epoch_costs(long, name)}
            entry["worst"] = worst(self.rows, name)
            entry["parameters"] = self.parameters.get(name, {})
            out[name] = entry
        return out

    def per_call(self) -> list[dict[str, Any]]:
        """Per-call data for plots."""
        return [row.to_json() for row in self.rows]

    def to_markdown(self) -> str:
        """Tables: overall, per source, loss reasons, parameters, worst trajectories."""
        lines = [f"Traces: `{self.path}`, {self.trajectories} trajectories, {len(self.rows)} model calls, "
                 f"{self.seconds:.0f} s.", ""]
        lines += _billed_table("Billed input cost, all trajectories (computed from the price models)", self.rows,
                               self.strategies)
        long = [r for r in self.rows if r.calls_in_trajectory >= LONG_TRAJECTORY_CALLS]
        lines += _length_tables(self.rows, self.strategies)
        lines += _epoch_table(self.rows)
        lines += _table("All trajectories", {n: summarise(self.rows, n) for n in self.strategies})
        for source in self.sources():
            subset = [r for r in self.rows if r.source == source]
            lines += _table(source, {n: summarise(subset, n) for n in self.strategies})
        lines += ["### Why references were lost", ""]
        for name in self.strategies:
            reasons = loss_reasons(self.rows, name)
            if reasons:
                lines.append(f"- **{name}**: " + "; ".join(f"{k} ×{v}" for k, v in list(reasons.items())[:6]))
        lines += ["", "### Why message lists would be refused (OpenAI's and Anthropic's rules, `policy.validate`)", ""]
        for name in self.strategies:
            kinds = invalid_reasons(self.rows, name)
            if kinds:
                lines.append(f"- **{name}**: " + "; ".join(f"{k} ×{v}" for k, v in kinds.items()))
        if not any(invalid_reasons(self.rows, name) for name in self.strategies):
            lines.append("- none: every strategy's every message list is valid")
        lines += ["", "### Worst trajectories (Dossier default policy)", ""]
        for item in worst(self.rows, "dossier"):
            lines.append(f"- `{item['trajectory']}`: lost {item['lost']} of {item['refs']} references")
            for loss in item["losses"][:4]:
                lines.append(f"  - call {loss['call']}, {loss['kind']}{' strict' if loss['strict'] else ''} "
                             f"`{loss['value'][:60]}`: {loss['reason']}")
        for source in self.sources():
            subset = [r for r in self.rows if r.source == source]
            lines += _billed_table(f"Billed input cost, {source}", subset, self.strategies)
        if long:
            lines += [f"{len({r.trajectory for r in long})} trajectories have at least {LONG_TRAJECTORY_CALLS} "
                      "model calls; their ratios are the columns marked 16+.", ""]
        compact = self.parameters.get("dossier", {}).get("compact_results", {})
        if compact:
            lines += ["", "### Compact result text (`policy/compact.py`) on every tool result of the file", "",
                      "| source | tool results | written compactly | read back exactly | tokens sent / raw tokens |",
                      "|---|---:|---:|---:|---:|"]
            for source, f in sorted(compact.items()):
                lines.append(f"| {source} | {f['results']:,} | {f['compacted']:,} | {f['round_trip_exact']:,} | "
                             f"{f['sent_over_raw_tokens']:.1%} |")
        lines += ["", "### Parameters", ""]
        for name, params in self.parameters.items():
            lines.append(f"- **{name}**: " + ", ".join(f"{k}={v}" for k, v in params.items() if k != "compact_results"))
        return "\n".join(lines)


def invalid_reasons(rows: list[CallRow], name: str) -> dict[str, int]:
    """How many of ``name``'s message lists break each provider rule (one count per list and rule)."""
    counts: Counter[str] = Counter()
    for row in rows:
        kinds = {problem_rule(problem) for problem in row.strategies[name].invalid}
        counts.update(kinds)
    return dict(counts.most_common())


def _billed_table(title: str, rows: list[CallRow], strategies: list[str]) -> list[str]:
    """Billed cost relative to cached full replay, per price model, and the cache figures at Anthropic's rules."""
    if not rows or not rows[0].strategies.get("full_replay", StrategyCall(0, 0, [])).bills:
        return []
    models = list(PRICE_MODELS)
    header = ["strategy"]
    for model in models:
        header += [model, f"{model} 16+"] if model != "uncached" else [model]
    header += ["cache hit rate (anthropic)", "uncached tokens per call, median (anthropic)", "invalid message lists"]
    lines = [f"### {title}", "", "Billed input cost as a ratio to full replay billed under the same price model "
             "(so full replay is 1.00 everywhere).", "",
             "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name in strategies:
        data = billed(rows, name)
        cells = [name]
        for model in models:
            entry = data.get(model, {})
            cells.append(_fmt(entry.get("cost_ratio_vs_cached_replay"), pct=False))
            if model != "uncached":
                cells.append(_fmt(entry.get("cost_ratio_vs_cached_replay_16plus"), pct=False))
        anthropic = data.get("anthropic", {})
        cells += [_fmt(anthropic.get("cache_hit_rate")), f"{anthropic.get('uncached_tokens_per_call_median', 0):,.0f}",
                  str(sum(bool(row.strategies[name].invalid) for row in rows))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _epoch_table(rows: list[CallRow]) -> list[str]:
    """Dossier's billed cost by epoch decision: which restarts the money goes to (all, and 16+ calls)."""
    everything = epoch_costs(rows, "dossier") if rows and "dossier" in rows[0].strategies else {}
    if not everything:
        return []
    long = epoch_costs([r for r in rows if r.calls_in_trajectory >= LONG_TRAJECTORY_CALLS], "dossier")
    lines = ["### Where Dossier's billed cost goes, by epoch decision (Anthropic prices)", "",
             "Each model call either continues its epoch (the prefix is a cache read) or starts one (the new "
             "prefix is written to the cache), for the reason the assembly's epoch decision records.", "",
             "| epoch decision | calls | share of billed cost | share of tokens written | mean prompt tokens "
             f"| 16+: calls | 16+: share of billed cost |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, e in everything.items():
        k = long.get(label, {})
        lines.append(f"| {label} | {e['calls']:,} | {_fmt(e['cost_share'])} | {_fmt(e['written_share'])} "
                     f"| {e['tokens_per_call_mean']:,.0f} | {k.get('calls', 0):,} | {_fmt(k.get('cost_share'))} |")
    return lines + [""]


def _length_tables(rows: list[CallRow], strategies: list[str]) -> list[str]:
    """Billed cost per length bucket for every strategy, then Dossier's recall per bucket."""
    if not rows or not rows[0].strategies.get("full_replay", StrategyCall(0, 0, [])).bills:
        return []
    buckets = {name: by_length(rows, name) for name in strategies}
    labels = list(buckets["full_replay"])
    counts = buckets["full_replay"]
    lines = ["### Billed input cost by trajectory length", "",
             "Ratio to cached full replay at Anthropic prices, GPT-5 prices in brackets; columns are model calls "
             "per trajectory (trajectories, calls).", "",
             "| strategy | " + " | ".join(f"{b} ({counts[b]['trajectories']}, {counts[b]['calls']:,})" for b in labels)
             + " |", "|---|" + "---:|" * len(labels)]
    for name in strategies:
        cells = []
        for label in labels:
            ratios = buckets[name][label]["cost_ratio_vs_cached_replay"]
            cells.append(f"{_fmt(ratios.get('anthropic'), pct=False)} ({_fmt(ratios.get('openai-gpt5'), pct=False)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "### Recall by trajectory length (Dossier default policy)", "",
              "| calls per trajectory | trajectories | carried refs | carried recall | strict carried recall "
              "| user refs | user recall |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, b in buckets.get("dossier", {}).items():
        lines.append(f"| {label} | {b['trajectories']} | {b['tool_refs']:,} | {_fmt(b['tool_ref_recall'])} "
                     f"| {_fmt(b['tool_ref_recall_strict'])} | {b['user_refs']:,} | {_fmt(b['user_ref_recall'])} |")
    return lines + [""]


def _fmt(value: float | None, pct: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value:.1%}" if pct else f"{value:.3f}"


def _table(title: str, summaries: dict[str, dict[str, Any]]) -> list[str]:
    first = next(iter(summaries.values()))
    lines = [
        f"### {title}", "",
        f"{first['calls']} model calls; {first['tool_refs']} carried references "
        f"({first['tool_refs_strict']} strict), {first['user_refs']} user references; last-call medians over "
        f"{first['last_call_trajectories']} trajectories with ≥{LAST_CALL_MIN_CALLS} calls.", "",
        "| strategy | history tokens (median ratio) | prompt tokens (median ratio) | prompt tokens (total ratio) "
        "| last-call history | last-call prompt | carried recall | strict carried recall | user recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in summaries.items():
        lines.append(
            f"| {name} | {_fmt(s['history_token_ratio_median'])} | {_fmt(s['prompt_token_ratio_median'])} "
            f"| {_fmt(s['prompt_tokens_total_ratio'])} | {_fmt(s['last_call_history_token_ratio_median'])} "
            f"| {_fmt(s['last_call_prompt_token_ratio_median'])} | {_fmt(s['tool_ref_recall'])} "
            f"| {_fmt(s['tool_ref_recall_strict'])} | {_fmt(s['user_ref_recall'])} |"
        )
    return lines + [""]
