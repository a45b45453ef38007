"""The worker's metrics endpoint and span exporter as the README's Configuration section states them."""

from __future__ import annotations

import logging
import socket

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from prometheus_client import CollectorRegistry

from dossier.settings import Settings
from dossier.telemetry import serve_metrics, span_exporter


def test_metrics_port_zero_serves_none() -> None:
    assert Settings.model_fields["metrics_port"].default == 9464
    assert serve_metrics(0, CollectorRegistry(), addr="127.0.0.1") is None


def test_a_metrics_port_in_use_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with caplog.at_level(logging.WARNING, logger="dossier.telemetry"):
            assert serve_metrics(taken.getsockname()[1], CollectorRegistry(), addr="127.0.0.1") is None
    assert "runs without /metrics" in caplog.text


def test_spans_go_where_the_settings_say(caplog: pytest.LogCaptureFixture) -> None:
    assert span_exporter(Settings(tracing_exporter=None, otel_exporter_otlp_endpoint=None)) is None
    assert span_exporter(Settings(tracing_exporter="none", otel_exporter_otlp_endpoint="http://h:4318")) is None
    assert isinstance(span_exporter(Settings(tracing_exporter="console")), ConsoleSpanExporter)
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:  # not a dependency: OTLP export is then refused with a warning, never silently
        with caplog.at_level(logging.WARNING, logger="dossier.telemetry"):
            assert span_exporter(Settings(otel_exporter_otlp_endpoint="http://h:4318")) is None
        assert "spans are not exported" in caplog.text
    else:
        assert span_exporter(Settings(otel_exporter_otlp_endpoint="http://h:4318")) is not None
