"""The model-call activity heartbeats while it waits for the provider, and drops the request if cancelled."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from activities import turns
from workflows.options import MODEL_CALL_TIMEOUT, MODEL_HEARTBEAT_TIMEOUT, model_call_timeout


async def test_a_slow_provider_call_heartbeats_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "HEARTBEAT_SECONDS", 0.05)
    environment = ActivityEnvironment()
    beats: list[tuple] = []
    environment.on_heartbeat = lambda *details: beats.append(details)

    async def slow_answer() -> str:
        await asyncio.sleep(0.3)
        return "answer"

    async def activity_body() -> str:
        return await turns._heartbeating(slow_answer())

    assert await environment.run(activity_body) == "answer"
    assert len(beats) >= 3


async def test_outside_an_activity_the_call_is_simply_awaited() -> None:
    async def answer() -> int:
        return 7

    assert await turns._heartbeating(answer()) == 7


async def test_a_cancelled_attempt_cancels_the_provider_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "HEARTBEAT_SECONDS", 0.05)
    environment = ActivityEnvironment()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hanging() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def activity_body() -> None:
        await turns._heartbeating(hanging())

    attempt = asyncio.ensure_future(environment.run(activity_body))
    await started.wait()
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    await asyncio.wait_for(cancelled.wait(), timeout=2)


def test_model_calls_get_a_generous_default_timeout_and_a_heartbeat_timeout() -> None:
    assert model_call_timeout(None).total_seconds() == MODEL_CALL_TIMEOUT.total_seconds() == 600
    assert model_call_timeout(90).total_seconds() == 90
    assert turns.HEARTBEAT_SECONDS * 3 <= MODEL_HEARTBEAT_TIMEOUT.total_seconds()
