"""Operations: the worker's Prometheus endpoint and its OpenTelemetry traces.

* **Metrics.** :func:`serve_metrics` serves a :class:`~activities.metrics.RuntimeMetrics`
  registry on ``METRICS_PORT`` (``/metrics``, Prometheus text format); 0 turns it off.
  Workers on one host share the default port: a worker that finds it taken serves on
  the next free one and logs that URL as a warning; a port set in ``METRICS_PORT`` is
  taken or the worker stops at start with :class:`MetricsPortError`.
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

import errno
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

from dossier.services.process import WILDCARD_HOSTS, http_base
from dossier.settings import Settings

logger = logging.getLogger(__name__)

SERVICE_NAME = "dossier-worker"
"""The ``service.name`` resource attribute of the worker's spans."""


METRICS_LINE = "metrics on"
"""What the worker logs, followed by the endpoint's URL, once it serves ``/metrics``
(:mod:`dossier.services.worker` reads the URL from it into the services state)."""

FALLBACK_PORTS = 16
"""A default port that is taken is followed by the next ones up to this many, then by any free port."""


class MetricsPortError(RuntimeError):
    """The metrics endpoint cannot serve on the configured address and port.

    Raised at start when ``METRICS_PORT`` is set and taken (another worker on this host holds it), or when
    ``METRICS_ADDRESS`` is not an address of this host.

    Attributes:
        addr: the address.
        port: the port.
    """

    def __init__(self, addr: str, port: int, error: OSError, *, configured: bool) -> None:
        self.addr, self.port = addr, port
        hint = ("METRICS_PORT is set, so the worker takes no other: give each worker on this host its own "
                "METRICS_PORT, unset it to take the next free port, or set 0 to serve no metrics"
                if configured and error.errno == errno.EADDRINUSE else "check METRICS_ADDRESS")
        super().__init__(f"metrics: cannot serve on {addr}:{port} ({error.strerror or error}); {hint}")


def serve_metrics(port: int, registry: CollectorRegistry, *, addr: str = "127.0.0.1",
                  configured: bool = False) -> WSGIServer | None:
    """Serve ``registry`` on ``http://addr:port/metrics`` from a daemon thread.

    Workers on one host share the default port: the first takes it, each next one the next free port (up to
    :data:`FALLBACK_PORTS` on, then any), logged as a warning with the URL it serves on. A port the operator
    set (``configured``) is taken or the worker does not start.

    Args:
        port: the port; 0 serves nothing.
        registry: the metrics to serve.
        addr: the address to bind (``METRICS_ADDRESS``; ``0.0.0.0`` for a scraper on another host).
        configured: the port was set (``METRICS_PORT``), not defaulted: no other will do.

    Returns:
        The HTTP server (``server_port`` is the port it serves on; ``shutdown()`` stops it), or ``None`` when
        disabled.

    Raises:
        MetricsPortError: a configured port is taken, or the address cannot be bound.
    """
    if port == 0:
        return None
    candidates = [port] if configured else [*range(port, min(port + FALLBACK_PORTS, 65536)), 0]
    for candidate in candidates:
        try:
            server, _thread = start_http_server(candidate, addr=addr, registry=registry)
        except OSError as error:
            if error.errno == errno.EADDRINUSE and not configured:
                continue
            raise MetricsPortError(addr, candidate, error, configured=configured) from error
        url = f"{http_base(addr, server.server_port)}/metrics"
        if addr in WILDCARD_HOSTS:  # the URL names this host's loopback; other hosts reach every interface
            url = f"{url} (bound to {addr or '0.0.0.0'}: every interface)"
        if server.server_port == port:
            logger.info("%s %s", METRICS_LINE, url)
        else:
            logger.warning("%s %s: port %d is taken (another worker on this host?); METRICS_PORT pins a port",
                           METRICS_LINE, url, port)
        return server
    raise AssertionError("unreachable: port 0 always binds")  # pragma: no cover


def serve_worker_metrics(settings: Settings, registry: CollectorRegistry) -> WSGIServer | None:
    """:func:`serve_metrics` as the worker's settings say: a ``METRICS_PORT`` set explicitly (environment,
    ``.env`` or a keyword) is pinned; the default moves on to a free port."""
    return serve_metrics(settings.metrics_port, registry, addr=settings.metrics_address,
                         configured="metrics_port" in settings.model_fields_set)


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


__all__ = ["FALLBACK_PORTS", "METRICS_LINE", "SERVICE_NAME", "MetricsPortError", "configure_tracing", "has_tracing",
           "serve_metrics", "serve_worker_metrics", "span_exporter", "tracing_interceptor"]
