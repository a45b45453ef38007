"""The worker's Prometheus metrics: what context assembly and the model calls cost, by kind.

One :class:`RuntimeMetrics` per worker, on its own registry, carried by
:class:`~activities.deps.GraphDeps` and served over HTTP by the composition
root (``METRICS_PORT``, see :mod:`dossier.telemetry`). The activities record
into it; nothing here reads the environment.

Labels are low-cardinality on purpose: the provider route, the runtime kind,
an omission reason, a decision kind, an assembly phase, an error class. Never
an account, conversation, participant or run id: those belong in the stored
records and in Temporal's search attributes, not in a time series.

Metric                                        Type       Labels               Counted once per
============================================  =========  ===================  ==================
dossier_assembled_tokens_total                counter    route, runtime_kind  stored assembly
dossier_replay_tokens_total                   counter    route, runtime_kind  stored assembly
dossier_omissions_total                       counter    reason               stored assembly
dossier_rehydrations_total                    counter    route                stored assembly
dossier_policy_denials_total                  counter    kind                 stored assembly
dossier_assemblies_total                      counter    route, runtime_kind  stored assembly
dossier_assembly_phase_seconds                histogram  phase                stored assembly
dossier_model_calls_total                     counter    route, outcome       model call
dossier_provider_request_seconds              histogram  route                provider request
dossier_provider_errors_total                 counter    route, error         provider request
dossier_billed_input_units_total              counter    route                provider request
dossier_activity_retries_total                counter    activity             attempt after the first
============================================  =========  ===================  ==================

Temporal retries an activity, so one logical step may run several attempts;
each metric says what it counts. The assembly figures count each stored
assembly once: a retry that finds the first attempt's assembly (which stands)
counts nothing. ``dossier_model_calls_total`` counts each model call (one
``call_model`` activity) once, by the attempt that ends it: ``answered``, or
``failed`` when it fails for good (a non-retryable error, or a retryable one on
its last allowed attempt). The provider figures count every request sent,
retried ones included, since each is latency seen and cost billed.
``dossier_activity_retries_total`` counts the attempts after the first of
every activity, by activity name (:class:`RetryCounting`, a worker interceptor).

*Replay tokens* are what replaying the whole visible transcript would have
sent (the assembly's ``legacy_tokens``). The *billed-cost estimate* is in
input-price units (1.0 = one uncached input token) with the cache-read prices
of :mod:`policy.pricing`: from the provider's reported usage when it reports
any, else the assembled tokens billed uncached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

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
        self.provider_errors = Counter("dossier_provider_errors",
                                       "Model provider requests that failed (retried ones included), by error class",
                                       ["route", "error"], registry=r)
        self.model_calls = Counter("dossier_model_calls",
                                   "Model calls by how they ended (answered, failed for good), once per call",
                                   ["route", "outcome"], registry=r)
        self.activity_retries = Counter("dossier_activity_retries", "Activity attempts after the first",
                                        ["activity"], registry=r)

    def record_assembly(self, route: str, runtime_kind: str, record: ContextAssemblyRecord,
                        decisions: Iterable[PolicyDecisionRecord], phase_ms: Mapping[str, float]) -> None:
        """Count one assembly: its tokens, omissions, rehydrations, denials and phase timings.

        Args:
            route: the provider route it was assembled for.
            runtime_kind: the runtime kind's value.
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
        """Count one answered provider request: its latency and its billed-cost estimate."""
        self.provider_latency.labels(route).observe(seconds)
        self.billed_input_units.labels(route).inc(billed_input_units(
            route, input_tokens=input_tokens, cache_read_tokens=cache_read_tokens,
            assembled_tokens=assembled_tokens))

    def record_provider_error(self, route: str, seconds: float, error: BaseException) -> None:
        """Count one failed provider request, by the error's class name (a small, fixed set)."""
        self.provider_latency.labels(route).observe(seconds)
        self.provider_errors.labels(route, type(error).__name__).inc()

    def record_model_call_end(self, route: str, *, answered: bool) -> None:
        """Count one model call that ended: answered, or failed for good (call it once per call)."""
        self.model_calls.labels(route, "answered" if answered else "failed").inc()

    def interceptor(self) -> Interceptor:
        """The worker interceptor that counts activity retries into these metrics."""
        return RetryCounting(self)


class RetryCounting(Interceptor):
    """Counts every activity attempt after the first into ``dossier_activity_retries_total``."""

    def __init__(self, metrics: RuntimeMetrics) -> None:
        self.metrics = metrics

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CountRetries(next, self.metrics)


class _CountRetries(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, metrics: RuntimeMetrics) -> None:
        super().__init__(next)
        self.metrics = metrics

    async def execute_activity(self, input: ExecuteActivityInput) -> object:
        info = activity.info()
        if info.attempt > 1:
            self.metrics.activity_retries.labels(info.activity_type).inc()
        return await super().execute_activity(input)


__all__ = ["INCLUDES_CACHED_INPUT", "PHASES", "RetryCounting", "RuntimeMetrics", "billed_input_units"]
