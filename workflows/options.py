"""Activity and child-workflow options shared by every workflow.

Timeouts and retry policies are part of the orchestration, so they live with
the workflows; each workflow module imports them from here.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

STEP_TIMEOUT = timedelta(seconds=60)
"""Start-to-close of graph steps (assemble, model call, checkpoint, promotion)."""

STEP_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=5)
"""Graph steps are idempotent: retry transient store errors a few times."""

ANSWER_CONFIRM_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=2.0,
                                   maximum_interval=timedelta(seconds=5), maximum_attempts=20)
"""How long a turn waits for a signalled answer's commit (about a minute) before it waits for another answer."""

ANSWER_CONFIRMED_PATCH = "answer-confirmed-in-graph"
"""Turns recorded before the answer check replay without it (``workflow.patched``)."""

TOOL_RETRY_INITIAL = timedelta(milliseconds=500)
"""First backoff of a tool's retries (doubling each time, up to the tool's ``max_attempts``)."""


def child_id(suffix: str) -> str:
    """A child workflow's id: the parent's id and a suffix that says which child it is."""
    return f"{workflow.info().workflow_id}/{suffix}"


__all__ = ["ANSWER_CONFIRMED_PATCH", "ANSWER_CONFIRM_RETRY", "STEP_RETRY", "STEP_TIMEOUT", "TOOL_RETRY_INITIAL", "child_id"]
