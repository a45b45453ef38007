"""Operations: the worker's Prometheus endpoint and its OpenTelemetry traces.

* **Metrics.** :func:`serve_metrics` serves a :class:`~activities.metrics.RuntimeMetrics`
  registry on ``METRICS_PORT`` (``/metrics``, Prometheus text format); 0 turns it off.
  A port that is taken is logged and skipped: the worker still runs.
* **Traces.** :func:`tracing_interceptor` is the Temporal SDK's
  ``TracingInterceptor``: the client's ``StartWorkflow`` span is the parent of the
  workflow's ``RunWorkflow`` span, its ``StartActivity`` spans, and the worker's
  ``RunActivity`` spans, beneath which :mod:`store.tracing` opens one span per SQL
  statement and per S3 request. :func:`configure_tracing` installs the global
  tracer provider with the exporter the settings name (``TRACING_EXPORTER``):
  ``otlp`` (OTLP over HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``; needs the optional
  ``opentelemetry-exporter-otlp-proto-http`` package), ``console`` (spans printed
  as JSON on stdout), or ``none``; unset means ``otlp`` when
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, else ``none``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from prometheus_client import CollectorRegistry, start_http_server
from temporalio.client import Client, Interceptor
from temporalio.contrib.opentelemetry import TracingInterceptor

from dossier.settings import Settings

logger = logging.getLogger(__name__)

SERVICE_NAME = "dossier-worker"
"""The ``service.name`` resource attribute of the worker's spans."""


def serve_metrics(port: int, registry: CollectorRegistry, *, addr: str = "127.0.0.1") -> WSGIServer | None:
    """Serve ``registry`` on ``http://addr:port/metrics`` from a daemon thread.

    Args:
        port: the port; 0 serves nothing.
        registry: the metrics to serve.
        addr: the address to bind (``METRICS_ADDRESS``; ``0.0.0.0`` for a scraper on another host).

    Returns:
        The HTTP server (``shutdown()`` stops it), or ``None`` when disabled or the port is taken.
    """
    if port == 0:
        return None
    try:
        server, _thread = start_http_server(port, addr=addr, registry=registry)
    except OSError as error:
        logger.warning("metrics: cannot serve on %s:%d (%s); the worker runs without /metrics", addr, port, error)
        return None
    logger.info("metrics on http://%s:%d/metrics", addr, port)
    return server


def tracing_interceptor() -> TracingInterceptor:
    """The Temporal SDK's tracing interceptor, on the global tracer provider (whenever it is installed)."""
    return TracingInterceptor()


def has_tracing(client: Client) -> bool:
    """Whether ``client`` already carries a tracing interceptor (a worker built on it inherits it)."""
    interceptors: Sequence[Interceptor] = client.config().get("interceptors", ())
    return any(isinstance(interceptor, TracingInterceptor) for interceptor in interceptors)


def span_exporter(settings: Settings) -> SpanExporter | None:
    """The exporter ``settings`` name, or ``None`` for no export (see the module docstring)."""
    kind = settings.tracing_exporter or ("otlp" if settings.otel_exporter_otlp_endpoint else "none")
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        logger.warning("tracing: OTLP export needs the opentelemetry-exporter-otlp-proto-http package; "
                       "spans are not exported")
        return None
    endpoint = settings.otel_exporter_otlp_endpoint
    kwargs: dict[str, Any] = {}
    if endpoint:
        kwargs["endpoint"] = f"{endpoint.rstrip('/')}/v1/traces"
    return OTLPSpanExporter(**kwargs)


def configure_tracing(settings: Settings) -> TracerProvider | None:
    """Install the global tracer provider with the configured exporter (once per process).

    Returns:
        The provider (shut it down to flush), or ``None`` when nothing is exported.
    """
    exporter = span_exporter(settings)
    if exporter is None:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    logger.info("tracing: exporting spans with %s", type(exporter).__name__)
    return provider


__all__ = ["SERVICE_NAME", "configure_tracing", "has_tracing", "serve_metrics", "span_exporter",
           "tracing_interceptor"]
