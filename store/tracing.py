"""OpenTelemetry spans for the graph (one per SQL statement) and the object store (one per S3 request).

Both use the process's global tracer provider (:mod:`dossier.telemetry` sets it
up in the worker); without one, OpenTelemetry's API makes every span a no-op.
A span started here is a child of whatever span is current: inside an
activity, the Temporal tracing interceptor's ``RunActivity`` span, so a trace
reads workflow -> activity -> graph queries and S3 requests.

Spans carry the operation and the database system or bucket, never a
statement's parameters, an object key (it names the account) or any payload.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

TRACER_NAME = "dossier.store"

_SPAN_KEY = "_dossier_span"
"""Where a statement's span waits, on SQLAlchemy's execution context, for the statement to end."""


def tracer() -> trace.Tracer:
    """The store's tracer (looked up per call, so a provider installed later is used)."""
    return trace.get_tracer(TRACER_NAME)


def _operation(statement: str) -> str:
    words = statement.lstrip().split(None, 1)
    return words[0].upper() if words else "?"


def instrument_engine(engine: AsyncEngine) -> AsyncEngine:
    """Give every statement the engine runs a ``graph <OPERATION>`` span (``graph SELECT``...).

    SQLAlchemy's asyncio layer runs these hooks in a greenlet that shares the
    calling task's context, so the span's parent is the caller's current span.

    Args:
        engine: the engine to instrument (once).
    """
    sync_engine = engine.sync_engine

    # A statement's span waits on its execution context; SQLAlchemy runs some statements (sequences, column
    # defaults, dialect probes: Connection._cursor_execute) with none, and then it waits on the connection,
    # which runs one statement at a time.
    def _put(conn: Any, context: Any, span: Span) -> None:
        if context is not None:
            setattr(context, _SPAN_KEY, span)
        else:
            conn.info[_SPAN_KEY] = span

    def _take(conn: Any, context: Any) -> Span | None:
        if context is not None:
            span: Span | None = getattr(context, _SPAN_KEY, None)
            if span is not None:
                delattr(context, _SPAN_KEY)
            return span
        return conn.info.pop(_SPAN_KEY, None) if conn is not None else None

    @event.listens_for(sync_engine, "before_cursor_execute")
    def _start(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        operation = _operation(statement)
        span = tracer().start_span(f"graph {operation}", attributes={
            "db.system.name": "postgresql", "db.operation.name": operation,
        })
        _put(conn, context, span)

    @event.listens_for(sync_engine, "after_cursor_execute")
    def _end(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        span = _take(conn, context)
        if span is not None:
            span.end()

    @event.listens_for(sync_engine, "handle_error")
    def _fail(exception_context: Any) -> None:
        span = _take(exception_context.connection, exception_context.execution_context)
        if span is not None:
            error = exception_context.original_exception
            # The exception's type only: a database error's message can quote row values (``DETAIL: Key ...``).
            span.add_event("exception", {"exception.type": type(error).__qualname__})
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.end()

    return engine


__all__ = ["TRACER_NAME", "instrument_engine", "tracer"]
