"""Activity failures are sorted once: retry what another attempt may fix, give up on the rest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from activities.errors import PromotionError, ToolOutcomeError, is_retryable, permanent, sorted_failures
from activities.providers.base import (
    ContextTooLongError,
    ProviderError,
    ProviderRequestError,
    ProviderUnavailableError,
    RateLimitedError,
    UnknownModelError,
)
from activities.tools.base import ToolArgumentError, ToolExecutionError
from policy.errors import DerivationError, UnknownParticipantError
from store.errors import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactStoreUnavailableError,
    BranchCycleError,
    IntegrityViolation,
    NotFoundError,
    PayloadTooLargeError,
    TransientStoreError,
)


class _Strict(BaseModel):
    count: int


def _validation_error() -> Exception:
    try:
        _Strict.model_validate({"count": "many"})
    except Exception as error:  # noqa: BLE001 - the pydantic error itself is the fixture
        return error
    raise AssertionError("unreachable")


class _FlakyProvider(ProviderError):
    retryable = True


RETRY = [
    TransientStoreError("connection reset"),
    ArtifactStoreUnavailableError("S3 answered 503"),
    ToolExecutionError("timed out"),
    _FlakyProvider("rate limited"),
    RateLimitedError("openai model 'm': HTTP 429 (rate limited)", status=429, retry_after=3.0),
    ProviderUnavailableError("openai model 'm': HTTP 503 (service unavailable)", status=503),
    RuntimeError("a bug: retried until a fixed worker is deployed"),
]
GIVE_UP = [
    NotFoundError("tool_call", "t-1"),
    IntegrityViolation("duplicate"),
    BranchCycleError(["a", "b", "a"]),
    ArtifactNotFoundError("k"),
    ArtifactIntegrityError("k", "aa", "bb"),
    PayloadTooLargeError("too big"),
    UnknownParticipantError("p"),
    DerivationError("bad locator"),
    ToolOutcomeError("pending"),
    PromotionError("not promotable"),
    ToolArgumentError("missing path"),
    UnknownModelError("scripted:nope"),
    ProviderRequestError("openai model 'm': HTTP 401 (authentication failed)", status=401),
    ContextTooLongError("anthropic model 'm': HTTP 400 (bad request): prompt is too long", status=400),
    _validation_error(),
]


@pytest.mark.parametrize("error", RETRY, ids=[type(e).__name__ for e in RETRY])
def test_retryable_errors_are_retried(error: Exception) -> None:
    assert is_retryable(error)


@pytest.mark.parametrize("error", GIVE_UP, ids=[type(e).__name__ for e in GIVE_UP])
def test_permanent_errors_are_not(error: Exception) -> None:
    assert not is_retryable(error)
    failure = permanent(error)
    assert failure.non_retryable and failure.type == type(error).__name__


async def test_sorted_failures_raises_permanent_errors_as_non_retryable_and_keeps_the_cause() -> None:
    @sorted_failures
    async def step() -> None:
        raise NotFoundError("model_run", "r-1")

    with pytest.raises(ApplicationError) as caught:
        await step()
    assert caught.value.non_retryable and caught.value.type == "NotFoundError"
    assert isinstance(caught.value.__cause__, NotFoundError)


async def test_sorted_failures_lets_retryable_errors_through_unchanged() -> None:
    error = TransientStoreError("database unavailable")

    @sorted_failures
    async def step() -> None:
        raise error

    with pytest.raises(TransientStoreError) as caught:
        await step()
    assert caught.value is error


async def test_sorted_failures_keeps_an_activitys_own_application_error() -> None:
    own = ApplicationError("tool attempt 2 failed", type="ToolExecutionError")

    @sorted_failures
    async def step() -> int:
        raise own

    with pytest.raises(ApplicationError) as caught:
        await step()
    assert caught.value is own and not caught.value.non_retryable


async def test_sorted_failures_returns_the_result_and_keeps_the_name() -> None:
    @sorted_failures
    async def start_model_run(value: int) -> int:
        return value + 1

    assert await start_model_run(1) == 2
    assert start_model_run.__name__ == "start_model_run"


async def test_a_retryable_error_that_names_a_wait_sets_temporals_next_retry_delay() -> None:
    error = RateLimitedError("openai model 'm': HTTP 429 (rate limited)", status=429, retry_after=2.5)

    @sorted_failures
    async def call_model() -> None:
        raise error

    with pytest.raises(ApplicationError) as caught:
        await call_model()
    assert caught.value.next_retry_delay == timedelta(seconds=2.5)
    assert not caught.value.non_retryable and caught.value.type == "RateLimitedError"
    assert caught.value.__cause__ is error


async def test_a_retryable_error_without_a_wait_passes_through_unchanged() -> None:
    error = ProviderUnavailableError("openai model 'm': HTTP 500 (server error)", status=500)

    @sorted_failures
    async def call_model() -> None:
        raise error

    with pytest.raises(ProviderUnavailableError) as caught:
        await call_model()
    assert caught.value is error


@pytest.mark.parametrize(("attempt", "maximum", "error", "ends"), [
    (1, 8, ProviderUnavailableError("openai model 'm': HTTP 503", status=503), False),  # retried: not the end yet
    (8, 8, ProviderUnavailableError("openai model 'm': HTTP 503", status=503), True),  # the last attempt the policy allows
    (1, 8, ProviderRequestError("openai model 'm': HTTP 401", status=401), True),  # non-retryable ends it at once
    (1, 8, permanent(ValueError("sorted already")), True),
    (3, 0, TransientStoreError("lost connection"), False),  # no attempt limit: never the last
])
def test_a_failure_ends_the_activity_when_no_attempt_follows(attempt: int, maximum: int,
                                                             error: BaseException, ends: bool) -> None:
    """What the model-call metrics count as a call's end (``dossier_model_calls_total{outcome="failed"}``)."""
    from dataclasses import replace

    from temporalio.common import RetryPolicy
    from temporalio.testing import ActivityEnvironment

    from activities.errors import ends_activity

    environment = ActivityEnvironment()
    environment.info = replace(environment.info, attempt=attempt, retry_policy=RetryPolicy(maximum_attempts=maximum))
    assert environment.run(lambda: ends_activity(error)) is ends
