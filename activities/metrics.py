"""The worker's Prometheus metrics: what context assembly and the model calls cost, by kind.

One :class:`RuntimeMetrics` per worker, on its own registry, carried by
:class:`~activities.deps.GraphDeps` and served over HTTP by the composition
root (``METRICS_PORT``, see :mod:`dossier.telemetry`). The activities record
into it; nothing here reads the environment.

Labels are low-cardinality on purpose: the provider route, the runtime kind,
an omission reason, a decision kind, an assembly phase, an error class. Never
an account, conversation, participant or run id: those belong in the stored
records and in Temporal's search attributes, not in a time series.

Metric                                        Type       Labels
============================================  =========  ===========================
dossier_assembled_tokens_total                counter    route, runtime_kind
dossier_replay_tokens_total                   counter    route, runtime_kind
dossier_billed_input_units_total              counter    route
dossier_omissions_total                       counter    reason
dossier_rehydrations_total                    counter    route
dossier_policy_denials_total                  counter    kind
dossier_assemblies_total                      counter    route, runtime_kind
dossier_assembly_phase_seconds                histogram  phase
dossier_provider_request_seconds              histogram  route
dossier_provider_errors_total                 counter    route, error
============================================  =========  ===========================

*Replay tokens* are what replaying the whole visible transcript would have
sent (the assembly's ``legacy_tokens``). The *billed-cost estimate* is in
input-price units (1.0 = one uncached input token) with the cache-read prices
of :mod:`policy.pricing`: from the provider's reported usage when it reports
any, else the assembled tokens billed uncached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram

from policy.enums import DecisionOutcome
from policy.pricing import price_for_route
from policy.records import ContextAssemblyRecord, PolicyDecisionRecord

PHASES = ("graph_query", "policy", "serialise")
"""The timed phases of an assembly (``AssemblyTimings``' fields without ``_ms``)."""

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Seconds: from a millisecond policy pass to a slow model call."""

INCLUDES_CACHED_INPUT = frozenset({"openai", "local"})
"""Routes whose reported input tokens already include the cache reads (OpenAI's ``prompt_tokens``);
Anthropic's ``input_tokens`` exclude them."""


def billed_input_units(route: str, *, input_tokens: int | None, cache_read_tokens: int | None,
                       assembled_tokens: int) -> float:
    """A model call's prompt cost in input-price units (1.0 = one uncached input token).

    Args:
        route: the provider route (``openai``, ``anthropic``, ``local``, ``scripted``).
        input_tokens: prompt tokens as the provider reported them, if it did.
        cache_read_tokens: prompt tokens it read from its cache, if reported.
        assembled_tokens: the assembly's own count, used when the provider reported nothing.

    Returns:
        Uncached tokens at 1.0 plus cached ones at the route's cache-read price.
    """
    if input_tokens is None:
        return float(assembled_tokens)
    cached = cache_read_tokens or 0
    uncached = input_tokens - cached if route in INCLUDES_CACHED_INPUT else input_tokens
    return max(uncached, 0) + cached * price_for_route(route).read


class RuntimeMetrics:
    """The worker's metrics on one registry (a fresh one unless given)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        """What ``/metrics`` serves."""
        r = self.registry
        self.assembled_tokens = Counter("dossier_assembled_tokens", "Tokens of the contexts assembled and sent",
                                        ["route", "runtime_kind"], registry=r)
        self.replay_tokens = Counter("dossier_replay_tokens",
                                     "Tokens replaying the whole visible transcript would have sent instead",
                                     ["route", "runtime_kind"], registry=r)
        self.billed_input_units = Counter("dossier_billed_input_units",
                                          "Billed-cost estimate of model prompts, in uncached input-token units",
                                          ["route"], registry=r)
        self.omissions = Counter("dossier_omissions", "Candidates kept out of a context, by reason",
                                 ["reason"], registry=r)
        self.rehydrations = Counter("dossier_rehydrations", "Raw payloads read back into a context",
                                    ["route"], registry=r)
        self.policy_denials = Counter("dossier_policy_denials", "Policy decisions that denied a record",
                                      ["kind"], registry=r)
        self.assemblies = Counter("dossier_assemblies", "Contexts assembled", ["route", "runtime_kind"], registry=r)
        self.assembly_phase = Histogram("dossier_assembly_phase_seconds", "Assembly latency by phase",
                                        ["phase"], buckets=LATENCY_BUCKETS, registry=r)
        self.provider_latency = Histogram("dossier_provider_request_seconds", "Model provider call latency",
                                          ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.provider_errors = Counter("dossier_provider_errors", "Model provider calls that failed, by error class",
                                       ["route", "error"], registry=r)

    def record_assembly(self, route: str, runtime_kind: str, record: ContextAssemblyRecord,
                        decisions: Iterable[PolicyDecisionRecord], phase_ms: Mapping[str, float]) -> None:
        """Count one assembly: its tokens, omissions, rehydrations, denials and phase timings.

        Args:
            route: the provider route it was assembled for.
            runtime_kind: the runtime kind's value.
            record: the assembly record.
            decisions: every decision persisted with it.
            phase_ms: milliseconds by phase name (:data:`PHASES`).
        """
        self.assemblies.labels(route, runtime_kind).inc()
        self.assembled_tokens.labels(route, runtime_kind).inc(record.assembled_tokens)
        self.replay_tokens.labels(route, runtime_kind).inc(record.legacy_tokens)
        for reason, count in record.omitted_counts.items():
            if count:
                self.omissions.labels(reason).inc(count)
        if record.rehydrated_refs:
            self.rehydrations.labels(route).inc(len(record.rehydrated_refs))
        for decision in decisions:
            if decision.outcome is DecisionOutcome.DENIED:
                self.policy_denials.labels(decision.kind).inc()
        for phase in PHASES:
            self.assembly_phase.labels(phase).observe(phase_ms.get(phase, 0.0) / 1000)

    def record_model_call(self, route: str, seconds: float, *, input_tokens: int | None,
                          cache_read_tokens: int | None, assembled_tokens: int) -> None:
        """Count one answered model call: its latency and its billed-cost estimate."""
        self.provider_latency.labels(route).observe(seconds)
        self.billed_input_units.labels(route).inc(billed_input_units(
            route, input_tokens=input_tokens, cache_read_tokens=cache_read_tokens,
            assembled_tokens=assembled_tokens))

    def record_provider_error(self, route: str, seconds: float, error: BaseException) -> None:
        """Count one failed model call, by the error's class name (a small, fixed set)."""
        self.provider_latency.labels(route).observe(seconds)
        self.provider_errors.labels(route, type(error).__name__).inc()


__all__ = ["INCLUDES_CACHED_INPUT", "PHASES", "RuntimeMetrics", "billed_input_units"]
