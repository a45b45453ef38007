"""Activity errors, and the one place an activity's failure is sorted into retry or give up.

::

    ActivityError
    ├── ToolOutcomeError   a tool outcome that cannot be captured as given
    └── PromotionError     something other than a report, file or failure offered for promotion

Sorting (:func:`is_retryable`, applied to every activity by :func:`sorted_failures`):

* an error that declares ``retryable`` (:class:`~activities.tools.base.ToolError`,
  :class:`~activities.providers.base.ProviderError`) is taken at its word; one
  that also says how long to wait (``retry_after``, a provider's
  ``Retry-After``) is raised as an ``ApplicationError`` whose
  ``next_retry_delay`` makes Temporal wait that long before the next attempt;
* :class:`~store.errors.TransientStoreError` (lost connection, deadlock, S3
  unreachable) is retried by Temporal under the activity's retry policy;
* every other error of Dossier's own (store, policy, activity errors) is
  permanent: another attempt meets the same unknown id, the same broken
  invariant or the same bad bytes, so it becomes a non-retryable
  ``ApplicationError`` and the workflow decides what to do;
* anything else (a bug, an unexpected library error) is retried, Temporal's
  default: a fixed and redeployed worker heals it without losing the run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import ParamSpec, TypeVar

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from policy.errors import PolicyError
from store.errors import StoreError, TransientStoreError

P = ParamSpec("P")
T = TypeVar("T")


class ActivityError(Exception):
    """Base class of activity-level errors."""


class ToolOutcomeError(ActivityError):
    """A tool outcome is inconsistent (e.g. a success without a result)."""


class PromotionError(ActivityError):
    """Something other than a report, a file handle or a failure was offered for promotion."""


def is_retryable(error: BaseException) -> bool:
    """Whether another attempt of the same activity may succeed (see the module docstring)."""
    declared = getattr(error, "retryable", None)
    if isinstance(declared, bool):
        return declared
    if isinstance(error, TransientStoreError):
        return True
    return not isinstance(error, StoreError | PolicyError | ActivityError | ValidationError)


def last_attempt() -> bool:
    """Whether the running activity attempt is the last its retry policy allows (never, without a limit)."""
    info = activity.info()
    policy = info.retry_policy
    return policy is not None and policy.maximum_attempts > 0 and info.attempt >= policy.maximum_attempts


def ends_activity(error: BaseException) -> bool:
    """Whether this failure ends the activity: Temporal makes no further attempt after it.

    A non-retryable failure (an ``ApplicationError`` marked so, or an error :func:`is_retryable` refuses) ends
    it, and so does any failure of the last attempt its retry policy allows.
    """
    retryable = not error.non_retryable if isinstance(error, ApplicationError) else is_retryable(error)
    return not retryable or last_attempt()


def retry_delay(error: BaseException) -> timedelta | None:
    """The wait a retryable error asks for before the next attempt (its ``retry_after``, in seconds), if any."""
    seconds = getattr(error, "retry_after", None)
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and math.isfinite(seconds) and seconds > 0:
        return timedelta(seconds=seconds)
    return None


def retried_after(error: BaseException, delay: timedelta) -> ApplicationError:
    """A retryable failure that tells Temporal to wait ``delay`` before the next attempt."""
    return ApplicationError(f"{type(error).__name__}: {error}", type=type(error).__name__, next_retry_delay=delay)


def permanent(error: BaseException) -> ApplicationError:
    """A non-retryable failure carrying the error's type and message."""
    return ApplicationError(f"{type(error).__name__}: {error}", type=type(error).__name__, non_retryable=True)


def sorted_failures(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Wrap an activity so its failures leave it sorted and logged.

    Put it under ``@activity.defn``. Retryable errors are re-raised as they are;
    permanent ones become a non-retryable ``ApplicationError`` raised from them.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except ApplicationError:
            raise  # already sorted by the activity itself
        except Exception as error:
            if is_retryable(error):
                activity.logger.warning("%s failed, will retry: %s: %s", fn.__name__, type(error).__name__, error)
                delay = retry_delay(error)
                if delay is not None:
                    raise retried_after(error, delay) from error
                raise
            activity.logger.error("%s failed for good: %s: %s", fn.__name__, type(error).__name__, error)
            raise permanent(error) from error

    return wrapper


__all__ = [
    "ActivityError",
    "ends_activity",
    "last_attempt",
    "PromotionError",
    "ToolOutcomeError",
    "is_retryable",
    "permanent",
    "retried_after",
    "retry_delay",
    "sorted_failures",
]
