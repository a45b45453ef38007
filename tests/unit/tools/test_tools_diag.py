"""``diag.flaky`` and ``diag.sleep``: retries and heartbeats on purpose, deterministically."""

from __future__ import annotations

import json
import time

import pytest

from activities.tools.base import ToolExecutionError


@pytest.mark.parametrize("fail_times", [1, 2, 4])
async def test_flaky_fails_then_succeeds_by_attempt(registry, make_context, fail_times):
    for attempt in range(1, fail_times + 1):
        with pytest.raises(ToolExecutionError, match=f"transient failure {attempt}/{fail_times}") as caught:
            await registry.execute("diag.flaky", make_context(attempt=attempt), {"fail_times": fail_times})
        assert caught.value.retryable is True
    result = await registry.execute("diag.flaky", make_context(attempt=fail_times + 1), {"fail_times": fail_times})
    assert json.loads(result.payload) == {"ok": True, "attempts": fail_times + 1}
    assert result.content_type == "application/json"


async def test_flaky_with_zero_failures_succeeds_at_once(registry, make_context):
    result = await registry.execute("diag.flaky", make_context(), {"fail_times": 0})
    assert json.loads(result.payload) == {"ok": True, "attempts": 1}


async def test_flaky_label_appears_in_the_error(registry, make_context):
    with pytest.raises(ToolExecutionError, match=r"transient failure 1/3 \[nightly\]"):
        await registry.execute("diag.flaky", make_context(), {"fail_times": 3, "label": "nightly"})


async def test_flaky_under_its_retry_policy(registry, make_context):
    """What Temporal does with max_attempts=5: three failures recover, five do not."""

    async def run(fail_times: int) -> tuple[str, int]:
        tool = registry.get("diag.flaky")
        for attempt in range(1, tool.max_attempts + 1):
            try:
                await registry.execute("diag.flaky", make_context(attempt=attempt), {"fail_times": fail_times})
            except ToolExecutionError:
                continue
            return "succeeded", attempt
        return "failed", tool.max_attempts

    assert await run(3) == ("succeeded", 4)
    assert await run(5) == ("failed", 5)


@pytest.mark.parametrize(("seconds", "beats"), [
    (0.5, [0.2, 0.4, 0.5]),
    (0.4, [0.2, 0.4]),
    (0, []),
])
async def test_sleep_heartbeats_every_step(registry, make_context, seconds, beats):
    heartbeats: list[object] = []
    started = time.monotonic()
    result = await registry.execute("diag.sleep", make_context(heartbeat=heartbeats.append), {"seconds": seconds})
    assert time.monotonic() - started >= seconds * 0.9
    assert heartbeats == beats
    assert json.loads(result.payload) == {"slept": seconds}
