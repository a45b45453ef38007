"""Where an orchestration-benchmark turn's time goes: activity, SQL and S3 timers.

A :class:`TurnTiming` collects one turn's numbers; :data:`CURRENT_TIMING` says
which turn the running code belongs to. The Temporal worker sets it per
activity (:class:`TimingInterceptor`), the in-process runner per step, and
:func:`instrumented` adds SQL statement and S3 call times to it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import event
from temporalio import activity
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput
from temporalio.worker import Interceptor as WorkerInterceptor

from activities.deps import GraphDeps


@dataclass
class TurnTiming:
    """Where one turn's time went (milliseconds, summed over its activities)."""

    activity_ms: dict[str, float] = field(default_factory=dict)
    activity_count: int = 0
    postgres_ms: float = 0.0
    postgres_statements: int = 0
    s3_ms: float = 0.0
    s3_calls: int = 0

    @property
    def activities_total_ms(self) -> float:
        return sum(self.activity_ms.values())

    def add_activity(self, name: str, ms: float) -> None:
        self.activity_ms[name] = self.activity_ms.get(name, 0.0) + ms
        self.activity_count += 1


CURRENT_TIMING: ContextVar[TurnTiming | None] = ContextVar("dossier_bench_turn_timing", default=None)


class Recorder:
    """Turn timings by workflow id (Temporal) or turn key (in-process)."""

    def __init__(self) -> None:
        self.by_key: dict[str, TurnTiming] = {}

    def timing(self, key: str) -> TurnTiming:
        return self.by_key.setdefault(key, TurnTiming())


class _TimingActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, recorder: Recorder) -> None:
        super().__init__(next)
        self._recorder = recorder

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        timing = self._recorder.timing(info.workflow_id or "")
        token = CURRENT_TIMING.set(timing)
        start = time.perf_counter()
        try:
            return await super().execute_activity(input)
        finally:
            timing.add_activity(info.activity_type, (time.perf_counter() - start) * 1000)
            CURRENT_TIMING.reset(token)


class TimingInterceptor(ClientInterceptor, WorkerInterceptor):
    """A client interceptor that workers built on the client also use: times every activity."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _TimingActivityInbound(next, self._recorder)


def _engine_of(deps: GraphDeps) -> Any:
    bind = deps.sessions.kw.get("bind")
    if bind is None:
        raise ValueError("the session factory has no bound engine to instrument")
    return bind.sync_engine if hasattr(bind, "sync_engine") else bind


@asynccontextmanager
async def instrumented(deps: GraphDeps) -> AsyncIterator[GraphDeps]:
    """``deps`` with SQL statement and S3 call times added to the current turn's timing."""
    engine = _engine_of(deps)

    def before(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        if context is not None:
            context._dossier_bench_start = time.perf_counter()

    def after(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        timing = CURRENT_TIMING.get()
        started = getattr(context, "_dossier_bench_start", None)
        if timing is not None and started is not None:
            timing.postgres_ms += (time.perf_counter() - started) * 1000
            timing.postgres_statements += 1

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)

    artifacts = copy.copy(deps.artifacts)
    original_call = deps.artifacts._call

    async def timed_call(fn, key=None, **kwargs):  # noqa: ANN001, ANN003, ANN202 - the wrapped method's signature
        start = time.perf_counter()
        try:
            return await original_call(fn, key, **kwargs)
        finally:
            timing = CURRENT_TIMING.get()
            if timing is not None:
                timing.s3_ms += (time.perf_counter() - start) * 1000
                timing.s3_calls += 1

    artifacts._call = timed_call  # type: ignore[method-assign]
    try:
        yield replace(deps, artifacts=artifacts)
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)

