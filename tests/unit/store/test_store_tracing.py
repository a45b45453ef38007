"""Statement spans end on every path SQLAlchemy takes: with or without an execution context, and on errors.

The hooks run on a synchronous SQLite engine (stdlib driver): the listeners are
SQLAlchemy's own engine events, the same ones the async Postgres engine fires.
``Connection._cursor_execute`` is the path SQLAlchemy itself takes for
statements without an execution context (sequences, column defaults, dialect
probes).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from sqlalchemy import create_engine, exc
from sqlalchemy.engine import Engine

from store import tracing


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "tracer", lambda: provider.get_tracer(tracing.TRACER_NAME))
    return exporter


@pytest.fixture
def engine(spans: InMemorySpanExporter) -> Engine:
    sync_engine = create_engine("sqlite://")
    tracing.instrument_engine(SimpleNamespace(sync_engine=sync_engine))  # type: ignore[arg-type]
    return sync_engine


def _ended(spans: InMemorySpanExporter) -> list[tuple[str, StatusCode, list[dict[str, Any]]]]:
    return [(span.name, span.status.status_code, [dict(event.attributes or {}) for event in span.events])
            for span in spans.get_finished_spans()]


def test_a_statement_with_an_execution_context_gets_an_ended_span(engine: Engine, spans: InMemorySpanExporter) -> None:
    with engine.connect() as conn:
        spans.clear()  # the dialect's first-connect probes
        conn.exec_driver_sql("SELECT 1")
    assert _ended(spans) == [("graph SELECT", StatusCode.UNSET, [])]


def test_a_statement_without_an_execution_context_gets_an_ended_span(engine: Engine,
                                                                     spans: InMemorySpanExporter) -> None:
    with engine.connect() as conn:
        spans.clear()
        cursor = conn.connection.cursor()
        conn._cursor_execute(cursor, "SELECT 1", ())
        conn._cursor_execute(cursor, "VALUES (2)", ())
    assert _ended(spans) == [("graph SELECT", StatusCode.UNSET, []), ("graph VALUES", StatusCode.UNSET, [])]


def test_a_failing_statement_ends_its_span_as_an_error_with_the_exception_type_only(
        engine: Engine, spans: InMemorySpanExporter) -> None:
    with engine.connect() as conn:
        spans.clear()
        with pytest.raises(exc.OperationalError):
            conn.exec_driver_sql("SELECT secret_value FROM no_such_table")
        cursor = conn.connection.cursor()
        with pytest.raises(exc.OperationalError):
            conn._cursor_execute(cursor, "SELECT secret_value FROM no_such_table", ())
    failed = ("graph SELECT", StatusCode.ERROR, [{"exception.type": "OperationalError"}])
    assert _ended(spans) == [failed, failed]
    assert all("secret_value" not in str(span.to_json()) for span in spans.get_finished_spans())
