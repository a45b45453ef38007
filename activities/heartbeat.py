"""Heartbeating while an activity awaits slow work (a provider call, a retention batch)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")


async def heartbeating(work: Awaitable[T], every: float, *, at_start: bool = False) -> T:
    """Await ``work``, heartbeating every ``every`` seconds meanwhile (and once at once when ``at_start``).

    A worker that died mid-activity is then noticed at the heartbeat timeout, not at the whole
    start-to-close; a cancelled attempt (heartbeat timeout, worker stopping) cancels ``work`` too.
    Called outside an activity (a harness, a test), it just awaits ``work``.
    """
    task = asyncio.ensure_future(work)
    try:
        if not activity.in_activity():
            return await task
        if at_start:
            activity.heartbeat()
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()
