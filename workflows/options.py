"""Activity and child-workflow options shared by every workflow.

Timeouts and retry policies are part of the orchestration, so they live with
the workflows; each workflow module imports them from here.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

STEP_TIMEOUT = timedelta(seconds=60)
"""Start-to-close of graph steps (assemble, checkpoint, promotion)."""

STEP_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=5)
"""Graph steps are idempotent: retry transient store errors a few times."""

ANSWER_CONFIRM_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=2.0,
                                   maximum_interval=timedelta(seconds=5), maximum_attempts=20)
"""How long a turn waits for a signalled answer's commit (about a minute) before it waits for another answer."""

ANSWER_CONFIRMED_PATCH = "answer-confirmed-in-graph"
"""Turns recorded before the answer check replay without it (``workflow.patched``)."""

MODEL_CALL_TIMEOUT = timedelta(minutes=10)
"""Start-to-close of one model call unless the turn says otherwise (``model_timeout_seconds``): a
small local model takes 30-90 s on a long prompt, a busy hosted one minutes on a long answer."""

MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=60)
"""The model-call activity heartbeats while it waits for the provider: a worker that died mid-call
is noticed after this long, not after the whole start-to-close timeout."""

MODEL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                          maximum_interval=timedelta(seconds=60), maximum_attempts=8)
"""Model calls: rate limits, timeouts, lost connections and 5xx are retried for about four minutes
(a provider's ``Retry-After`` replaces the backoff); refusals are non-retryable and fail at once."""

CONTEXT_REASSEMBLY_PATCH = "reassemble-after-context-too-long"
"""Turns recorded before a context refused as too long was re-assembled replay without it (``workflow.patched``)."""

TOOL_RETRY_INITIAL = timedelta(milliseconds=500)
"""First backoff of a tool's retries (doubling each time, up to the tool's ``max_attempts``)."""


def model_call_timeout(seconds: float | None) -> timedelta:
    """Start-to-close of a model call: the turn's ``model_timeout_seconds``, or :data:`MODEL_CALL_TIMEOUT`."""
    return timedelta(seconds=seconds) if seconds else MODEL_CALL_TIMEOUT


def child_id(suffix: str) -> str:
    """A child workflow's id: the parent's id and a suffix that says which child it is."""
    return f"{workflow.info().workflow_id}/{suffix}"


__all__ = [
    "ANSWER_CONFIRMED_PATCH",
    "ANSWER_CONFIRM_RETRY",
    "CONTEXT_REASSEMBLY_PATCH",
    "MODEL_CALL_TIMEOUT",
    "MODEL_HEARTBEAT_TIMEOUT",
    "MODEL_RETRY",
    "STEP_RETRY",
    "STEP_TIMEOUT",
    "TOOL_RETRY_INITIAL",
    "child_id",
    "model_call_timeout",
]
