"""The pieces of operations that need no server: billed-cost arithmetic, exporter choice, the metrics port."""

from __future__ import annotations

import logging
import socket
import urllib.request

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from activities.metrics import RuntimeMetrics, billed_input_units
from contracts import Scope
from dossier.settings import Settings
from dossier.services.process import free_ports
from dossier.services.worker import metrics_url
from dossier.telemetry import METRICS_LINE, MetricsPortError, serve_metrics, serve_worker_metrics, span_exporter
from dossier.visibility import SEARCH_ATTRIBUTE_NAMES, dev_server_args
from policy.enums import RuntimeKind
from workflows.visibility import SUMMARY_MAX_CHARS, search_attributes, summary, workflow_summary

SCOPE = Scope(account_id="acct-1", conversation_id="conv-1", branch_id="branch-1")


@pytest.mark.parametrize(("route", "input_tokens", "cached", "expected"), [
    # OpenAI's prompt tokens include the cached ones; cached input at 0.5x (policy.pricing).
    ("openai", 1500, 1024, 476 + 512.0),
    # Anthropic's input tokens exclude cache reads; reads at 0.1x.
    ("anthropic", 476, 1024, 476 + 102.4),
    ("openai", 1500, None, 1500.0),
    # No usage reported (the scripted models): the assembled tokens, uncached.
    ("scripted", None, None, 321.0),
    # A route the price table does not know: its cache reads are billed uncached, on top of its input.
    ("mystery", 100, 40, 140.0),
])
def test_billed_input_units(route: str, input_tokens: int | None, cached: int | None, expected: float) -> None:
    assert billed_input_units(route, input_tokens=input_tokens, cache_read_tokens=cached,
                              assembled_tokens=321) == pytest.approx(expected)


def test_search_attributes_are_ids_and_enum_values_never_the_account() -> None:
    attributes = {key.name: value for key, value in search_attributes(SCOPE, RuntimeKind.CHAT, "part-1")}
    assert attributes == {"DossierConversationId": "conv-1", "DossierBranchId": "branch-1",
                          "DossierParticipantId": "part-1", "DossierRuntimeKind": "chat"}
    assert set(attributes) == set(SEARCH_ATTRIBUTE_NAMES)
    batch = {key.name for key, _ in search_attributes(SCOPE, None)}
    assert batch == {"DossierConversationId", "DossierBranchId"}


def test_summaries_join_parts_and_stay_one_short_line() -> None:
    assert workflow_summary("agent turn", SCOPE, RuntimeKind.CHAT, "http://inspector:1/") == (
        "agent turn · chat · http://inspector:1/conversations/conv-1")
    assert workflow_summary("discussion", SCOPE, RuntimeKind.DISCUSSION, None, "2 rounds") == (
        "discussion · discussion · 2 rounds")
    assert summary("a", None, 3) == "a · 3"
    assert len(summary("x" * 1000)) == SUMMARY_MAX_CHARS


def test_dev_server_args_register_every_attribute_as_keyword() -> None:
    args = dev_server_args()
    assert args[0::2] == ["--search-attribute"] * len(SEARCH_ATTRIBUTE_NAMES)
    assert args[1::2] == [f"{name}=Keyword" for name in SEARCH_ATTRIBUTE_NAMES]


def test_the_exporter_follows_the_settings(caplog: pytest.LogCaptureFixture) -> None:
    assert span_exporter(Settings(_env_file=None)) is None
    assert isinstance(span_exporter(Settings(_env_file=None, tracing_exporter="console")), ConsoleSpanExporter)
    assert span_exporter(Settings(_env_file=None, tracing_exporter="none",
                                  otel_exporter_otlp_endpoint="http://collector:4318")) is None
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:
        with caplog.at_level(logging.WARNING, logger="dossier.telemetry"):
            assert span_exporter(Settings(_env_file=None, otel_exporter_otlp_endpoint="http://collector:4318")) is None
        assert "opentelemetry-exporter-otlp-proto-http" in caplog.text
    else:  # pragma: no cover - depends on the environment
        assert span_exporter(Settings(_env_file=None, otel_exporter_otlp_endpoint="http://collector:4318"))


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def test_metrics_port_zero_serves_nothing() -> None:
    assert serve_metrics(0, RuntimeMetrics().registry) is None


def test_a_second_worker_on_the_default_port_serves_on_the_next_free_one_and_says_where(
        caplog: pytest.LogCaptureFixture) -> None:
    """Two workers on one host with the default METRICS_PORT: both export, the second says on which port."""
    first_metrics, second_metrics = RuntimeMetrics(), RuntimeMetrics()
    with socket.socket() as probe:  # a port free now, as the default is on a quiet host
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = serve_metrics(port, first_metrics.registry, addr="127.0.0.1")
    assert first is not None
    try:
        with caplog.at_level(logging.INFO, logger="dossier.telemetry"):
            second = serve_metrics(port, second_metrics.registry, addr="127.0.0.1")
        assert second is not None
        try:
            assert second.server_port != port
            assert (f"{METRICS_LINE} http://127.0.0.1:{second.server_port}/metrics: port {port} is taken"
                    in caplog.text)
            assert metrics_url(caplog.text) == f"http://127.0.0.1:{second.server_port}/metrics"
            first_metrics.provider_errors.labels("openai", "RateLimitedError").inc()
            second_metrics.provider_errors.labels("anthropic", "RateLimitedError").inc()
            # Each worker's own registry, each on its own port.
            assert 'dossier_provider_errors_total{error="RateLimitedError",route="openai"} 1.0' in _scrape(port)
            assert 'route="anthropic"' in _scrape(second.server_port) and 'route="openai"' not in _scrape(
                second.server_port)
        finally:
            second.shutdown()
    finally:
        first.shutdown()


def test_a_configured_port_that_is_taken_stops_the_start_with_a_typed_error() -> None:
    metrics = RuntimeMetrics()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(MetricsPortError) as refused:
            serve_metrics(port, metrics.registry, addr="127.0.0.1", configured=True)
    assert refused.value.port == port and refused.value.addr == "127.0.0.1"
    assert f"cannot serve on 127.0.0.1:{port}" in str(refused.value)
    assert "give each worker on this host its own METRICS_PORT" in str(refused.value)
    with pytest.raises(MetricsPortError, match="check METRICS_ADDRESS"):  # not an address of this host
        serve_metrics(port, metrics.registry, addr="192.0.2.1")


def test_a_metrics_endpoint_bound_to_every_interface_is_logged_with_a_url_to_open(
        caplog: pytest.LogCaptureFixture) -> None:
    """The compose worker binds 0.0.0.0: its log names a URL that opens, and says it listens everywhere."""
    with caplog.at_level(logging.INFO, logger="dossier.telemetry"):
        server = serve_metrics(free_ports(1)[0], RuntimeMetrics().registry, addr="0.0.0.0")
    assert server is not None
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        assert f"{METRICS_LINE} {url} (bound to 0.0.0.0: every interface)" in caplog.text
        assert metrics_url(caplog.text) == url and "http://0.0.0.0" not in caplog.text
        assert "dossier_assemblies_total" in _scrape(server.server_port)
    finally:
        server.shutdown()


def test_only_a_metrics_port_the_operator_set_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the worker serves with (``serve_worker_metrics``): METRICS_PORT in the environment is pinned."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        monkeypatch.setenv("METRICS_PORT", str(squatter.getsockname()[1]))
        with pytest.raises(MetricsPortError):
            serve_worker_metrics(Settings(_env_file=None), RuntimeMetrics().registry)
    monkeypatch.delenv("METRICS_PORT")
    assert "metrics_port" not in Settings(_env_file=None).model_fields_set  # the default: not pinned


def test_inspector_links_default_to_the_embedded_inspector() -> None:
    assert Settings(_env_file=None, inspector_port=8300).inspector_base_url() == "http://127.0.0.1:8300"
    assert Settings(_env_file=None, inspector_url="https://inspect.example/").inspector_base_url() == (
        "https://inspect.example")


def test_settings_validate_the_metrics_port() -> None:
    assert Settings(_env_file=None, metrics_port=0).metrics_port == 0
    with pytest.raises(ValueError):
        Settings(_env_file=None, metrics_port=70000)


def test_metrics_bind_this_host_only_unless_told() -> None:
    assert Settings.model_fields["metrics_address"].default == "127.0.0.1"
    assert Settings.model_fields["metrics_port"].default == 9464


def test_metric_labels_are_kinds_never_ids() -> None:
    """The README's promise: labels are route, runtime kind, omission reason, decision kind, phase, error
    class, call outcome and activity name; no metric can be split by an account, conversation, branch,
    participant or run."""
    allowed = {"route", "runtime_kind", "reason", "kind", "phase", "error", "outcome", "activity", "le"}
    metrics = RuntimeMetrics()
    metrics.provider_errors.labels("openai", "RateLimitedError").inc()
    labels = {name for family in metrics.registry.collect() for sample in family.samples for name in sample.labels}
    named = {name for metric in vars(metrics).values() for name in getattr(metric, "_labelnames", ())}
    assert named and named <= allowed, named - allowed
    assert labels <= allowed, labels - allowed
