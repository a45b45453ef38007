"""Diagnostic scripts: ``flaky`` (retries) and ``sleeper`` (heartbeats).

Each makes one call whose parameters come from the user's message and then
reports the outcome as the context shows it: a result after a recovered
retry, or the ``FAILED`` call with its error when every attempt failed.
"""

from __future__ import annotations

import re

from activities.providers.scripted.scripts.readings import field
from activities.providers.scripted.scripts.steps import Reply, Turn, advance, retry_requested

DEFAULT_FAIL_TIMES = 2
DEFAULT_SLEEP_SECONDS = 5

_FAIL_TIMES = re.compile(r"(?P<a>\d+)\s*(?:times?|failures?|attempts?)\b|\bfail\w*\s+(?P<b>\d+)", re.IGNORECASE)
_SECONDS = re.compile(
    r"(?P<n>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?)\b|\bsleep\w*\s+(?:for\s+)?(?P<m>\d+(?:\.\d+)?)", re.IGNORECASE
)


def fail_times(text: str) -> int:
    """How many failures the user asked for (``fail 3 times``), else the default."""
    found = _FAIL_TIMES.search(text)
    return int(found.group("a") or found.group("b")) if found else DEFAULT_FAIL_TIMES


def sleep_seconds(text: str) -> int | float:
    """How long the user asked to sleep (``sleep 7 seconds``), else the default."""
    found = _SECONDS.search(text)
    if not found:
        return DEFAULT_SLEEP_SECONDS
    value = float(found.group("n") or found.group("m"))
    return int(value) if value.is_integer() else value


def flaky(turn: Turn) -> Reply:
    """Call ``diag.flaky`` and report whether the retries recovered."""
    times = fail_times(turn.view.latest_user_text())
    progress = turn.view.progress("diag.flaky", fail_times=times)
    if progress.state == "failed" and not retry_requested(turn):
        # An open FAILED call line of the runtime context, or the call's own native tool message.
        if progress.call is not None:
            attempts, detail, error = progress.call.attempts, progress.call.detail, progress.call.error
        else:
            assert progress.failure is not None
            attempts, detail, error = progress.failure.text_attempts, progress.failure.text, progress.failure.result
        critical = ", retry-critical" if "retry-critical" in detail else ""
        return Reply(text=(
            f"diag.flaky failed after {attempts or '?'} attempt(s){critical} {progress.cite}: "
            f"{error}. The retries did not recover."
        ))
    if (reply := advance(turn, progress, "diag.flaky", {"fail_times": times},
                         f"finish diag.flaky with {times} planned failure(s)")) is not None:
        return reply
    if progress.memory is None:
        return Reply(text=f"diag.flaky finished {progress.cite}, but its result is not in my context.")
    attempts = field(progress.memory.result, "attempts") or "?"
    return Reply(text=(
        f"diag.flaky succeeded on attempt {attempts} {progress.memory.cite} after {times} planned transient "
        "failure(s): the retries recovered."
    ))


def sleeper(turn: Turn) -> Reply:
    """Call ``diag.sleep`` and report how long it slept."""
    seconds = sleep_seconds(turn.view.latest_user_text())
    progress = turn.view.progress("diag.sleep", seconds=seconds)
    if (reply := advance(turn, progress, "diag.sleep", {"seconds": seconds}, f"sleep {seconds} s")) is not None:
        return reply
    if progress.memory is None:
        return Reply(text=f"diag.sleep finished {progress.cite}, but its result is not in my context.")
    slept = field(progress.memory.result, "slept") or str(seconds)
    return Reply(text=f"Slept {slept} s {progress.memory.cite}, heartbeating throughout.")


__all__ = ["fail_times", "flaky", "sleep_seconds", "sleeper"]
