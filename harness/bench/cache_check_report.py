"""The cache check's records and report: observed prompt-cache reuse against the slot rule's prediction.

What :mod:`harness.bench.cache_check` measured, summarised per strategy from
each sequence's second call on (a first call finds what the previous sequence
left in the slot, which the per-participant simulation does not model):

* cached share: reused tokens over prompt tokens, the server's
  (``timings.cache_n`` / ``usage.prompt_tokens``) against the prediction's
  (:data:`harness.bench.billing.LLAMA_CPP_SLOT` on the benchmark's cl100k tokens);
* processed tokens (evaluated anew) and Dossier's over full replay's, both ways;
* the largest per-call disagreement of the two shares;
* whether the rule on the server's own tokens gives ``cache_n`` exactly, per call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STRATEGIES = ("full_replay", "dossier")
"""Transcript replay against Dossier's assembly: the two sides of the traces benchmark's headline."""


@dataclass
class Sent:
    """One request as sent to the server, with what was predicted and what the server reported."""

    trajectory: str
    strategy: str
    call: int
    """0-based model call of the trajectory."""
    messages: list[dict[str, Any]] = field(repr=False)
    bench_tokens: int = 0
    """The benchmark's count of the prompt (cl100k, :func:`harness.bench.strategy.count_tokens`)."""
    predicted_cached: int = 0
    """The slot rule's reuse (``LLAMA_CPP_SLOT``) on the benchmark's tokens of this strategy's calls."""
    server_tokens: int = 0
    """The server's ``usage.prompt_tokens``."""
    server_cached: int = 0
    """The server's ``timings.cache_n``."""
    server_evaluated: int = 0
    """The server's ``timings.prompt_n``."""
    usage_cached: int | None = None
    """``usage.prompt_tokens_details.cached_tokens`` when the server reports it."""
    rule_cached: int = 0
    """The slot rule's reuse on the server's own tokens, over everything sent to the slot (warm-up first)."""
    rule_any_cached: int = 0
    """The same with every earlier prompt a candidate (llama.cpp's RAM prompt cache can restore one)."""
    tokenized: int = 0
    """Length of ``/tokenize`` of ``/apply-template`` (should equal ``server_tokens``)."""
    seconds: float = 0.0

    @property
    def predicted_share(self) -> float:
        """Predicted reuse over the benchmark's prompt tokens."""
        return self.predicted_cached / self.bench_tokens if self.bench_tokens else 0.0

    @property
    def observed_share(self) -> float:
        """Reported reuse over the server's prompt tokens."""
        return self.server_cached / self.server_tokens if self.server_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        """The request's figures (its messages are the trajectory's, not repeated here)."""
        return {"trajectory": self.trajectory, "strategy": self.strategy, "call": self.call,
                "bench_tokens": self.bench_tokens, "predicted_cached": self.predicted_cached,
                "server_tokens": self.server_tokens, "server_cached": self.server_cached,
                "server_evaluated": self.server_evaluated, "usage_cached": self.usage_cached,
                "rule_cached": self.rule_cached, "rule_any_cached": self.rule_any_cached,
                "tokenized": self.tokenized, "seconds": round(self.seconds, 2)}


@dataclass
class CacheCheckReport:
    """Every request of the check and the parameters it ran with."""

    requests: list[Sent]
    parameters: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def compared(self, strategy: str | None = None) -> list[Sent]:
        """Requests from each sequence's second call on (of one strategy, or all)."""
        return [r for r in self.requests if r.call >= 1 and (strategy is None or r.strategy == strategy)]

    def strategy_summary(self, strategy: str) -> dict[str, Any]:
        """Cached shares and processed tokens, observed and predicted, of one strategy's compared calls."""
        rows = self.compared(strategy)
        bench, predicted = sum(r.bench_tokens for r in rows), sum(r.predicted_cached for r in rows)
        server, cached = sum(r.server_tokens for r in rows), sum(r.server_cached for r in rows)
        firsts = [r for r in self.requests if r.call == 0 and r.strategy == strategy]
        return {
            "calls_compared": len(rows),
            "cached_share_observed": _ratio(cached, server),
            "cached_share_predicted": _ratio(predicted, bench),
            "processed_observed": sum(r.server_evaluated for r in rows),
            "processed_predicted": bench - predicted,
            "prompt_tokens_observed": server,
            "prompt_tokens_predicted": bench,
            "first_calls": len(firsts),
            "first_calls_cached_observed": sum(r.server_cached for r in firsts),
            "first_calls_prompt_tokens_observed": sum(r.server_tokens for r in firsts),
        }

    def summary(self) -> dict[str, Any]:
        """The figures the markdown shows (see the module docstring)."""
        per = {name: self.strategy_summary(name) for name in STRATEGIES}
        replay, ours = per["full_replay"], per["dossier"]
        rows = self.compared()
        worst = max(rows, key=lambda r: abs(r.observed_share - r.predicted_share), default=None)
        exact = [r for r in self.requests if r.rule_cached == r.server_cached]
        return {
            "strategies": per,
            "dossier_over_replay_processed": {
                "observed": _ratio(ours["processed_observed"], replay["processed_observed"]),
                "predicted": _ratio(ours["processed_predicted"], replay["processed_predicted"]),
            },
            "largest_disagreement": None if worst is None else {
                "trajectory": worst.trajectory, "strategy": worst.strategy, "call": worst.call,
                "cached_share_observed": round(worst.observed_share, 4),
                "cached_share_predicted": round(worst.predicted_share, 4),
                "difference": round(worst.observed_share - worst.predicted_share, 4)},
            "rule_on_server_tokens": {
                "calls": len(self.requests), "exact": len(exact),
                "exact_from_call_2": sum(r.call >= 1 for r in exact), "calls_from_call_2": len(rows),
                "mismatches": [{"trajectory": r.trajectory, "strategy": r.strategy, "call": r.call,
                                "rule": r.rule_cached, "any_earlier_prompt": r.rule_any_cached,
                                "cache_n": r.server_cached}
                               for r in self.requests if r.rule_cached != r.server_cached],
                "mismatches_explained_by_an_earlier_prompt": sum(
                    r.rule_any_cached == r.server_cached for r in self.requests if r.rule_cached != r.server_cached),
                "template_tokens_match_usage": sum(r.tokenized == r.server_tokens for r in self.requests)},
            "usage_reports_cached_tokens": any(r.usage_cached is not None for r in self.requests),
            "trajectories": sorted({r.trajectory for r in self.requests}),
            "requests": len(self.requests),
        }

    def to_json(self) -> dict[str, Any]:
        """Summary, parameters and every request (messages left out: they are the trajectories')."""
        return {"summary": self.summary(), "parameters": self.parameters, "seconds": round(self.seconds, 1),
                "calls": [r.to_json() for r in self.requests]}

    def to_markdown(self) -> str:
        """The summary as a short Markdown page."""
        s = self.summary()
        lines = ["# Prompt-cache reuse: the billing simulation against llama.cpp", "",
                 f"{len(s['trajectories'])} trajectories, {s['requests']} requests to the embedded model server "
                 f"({self.parameters.get('server', {}).get('model', '?')}, one slot, `cache_prompt`), "
                 f"{self.seconds / 60:.1f} min. Predicted: `LLAMA_CPP_SLOT` on the benchmark's cl100k tokens; "
                 "observed: the server's `timings.cache_n` and `usage.prompt_tokens`. From each sequence's "
                 "second call on.", "",
                 "| strategy | calls | cached share observed | predicted | processed observed | predicted |",
                 "|---|---:|---:|---:|---:|---:|"]
        for name, row in s["strategies"].items():
            lines.append(f"| {name} | {row['calls_compared']} | {row['cached_share_observed']:.1%} | "
                         f"{row['cached_share_predicted']:.1%} | {row['processed_observed']:,} | "
                         f"{row['processed_predicted']:,} |")
        ratio, worst, rule = s["dossier_over_replay_processed"], s["largest_disagreement"], s["rule_on_server_tokens"]
        lines += ["", f"Dossier / full replay, tokens processed: observed {ratio['observed']:.3f}, "
                      f"predicted {ratio['predicted']:.3f}."]
        if worst is not None:
            lines.append(f"Largest per-call disagreement: {worst['trajectory']} {worst['strategy']} call "
                         f"{worst['call']}: cached share observed {worst['cached_share_observed']:.1%}, predicted "
                         f"{worst['cached_share_predicted']:.1%}.")
        lines.append(f"The rule on the server's own tokens (`/apply-template` + `/tokenize`) gives `cache_n` exactly "
                     f"for {rule['exact']} of {rule['calls']} requests ({rule['exact_from_call_2']} of "
                     f"{rule['calls_from_call_2']} from call 2); of the {len(rule['mismatches'])} others, "
                     f"{rule['mismatches_explained_by_an_earlier_prompt']} are the longest prefix shared with an "
                     "earlier prompt than the previous one (llama.cpp's RAM prompt cache restored it).")
        for miss in rule["mismatches"][:10]:
            lines.append(f"- {miss['trajectory']} {miss['strategy']} call {miss['call']}: slot rule "
                         f"{miss['rule']}, any earlier prompt {miss['any_earlier_prompt']}, cache_n {miss['cache_n']}")
        lines.append("`usage.prompt_tokens_details.cached_tokens`: "
                     + ("reported." if s["usage_reports_cached_tokens"] else "not reported by this server version."))
        lines += ["", "Trajectories: " + ", ".join(f"`{t}`" for t in s["trajectories"]) + "."]
        return "\n".join(lines) + "\n"


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


__all__ = ["STRATEGIES", "CacheCheckReport", "Sent"]
