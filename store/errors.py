"""Errors raised by the store.

::

    StoreError
    ├── NotFoundError              an id that does not exist in the caller's account
    ├── AccountDeletedError        a write to an account whose deletion has begun
    ├── BranchCycleError           the branch parent chain loops back on itself
    ├── AssemblyNotReplayableError a stored assembly that cannot be recomputed (inputs not stored, or gone)
    ├── IntegrityViolation         a write would break a constraint of the graph
    │   ├── InvalidForkPointError  a fork message that is not in the parent's lineage
    │   └── TaintError             a derived record names a source whose privacy class is unknown
    ├── TransientStoreError        lost connection, deadlock, serialisation failure: retry
    │   └── ArtifactStoreUnavailableError   (also an ArtifactStoreError)
    └── ArtifactStoreError
        ├── ArtifactNotFoundError          no object under the key
        │   └── ArtifactRetainedError      retention archived or removed the raw bytes on purpose
        ├── ArtifactIntegrityError         the object's bytes do not hash to the expected sha256
        ├── PayloadTooLargeError           a payload over the configured maximum
        └── ArtifactStoreUnavailableError  the S3 endpoint failed or is unreachable

An activity sorts failures with two checks: :class:`TransientStoreError` is
re-raised for Temporal to retry; every other :class:`StoreError` is permanent.

Library exceptions (SQLAlchemy/asyncpg, minio/urllib3) are translated into
these types once, where the store calls the library: in
:func:`store._sql.translate_errors` and inside :class:`store.artifacts.ArtifactStore`.
Callers only ever see this tree. Any :class:`StoreError` raised by a write
means the caller's transaction must be rolled back before it is used again
(a Postgres transaction stays aborted after an error).
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every store error."""


class NotFoundError(StoreError):
    """An id that does not exist, or exists only in another account.

    Both cases read the same on purpose: a caller cannot probe other
    accounts' ids.

    Attributes:
        kind: what was looked up (``"conversation"``, ``"branch"`` ...).
        id: the id that was not found.
    """

    def __init__(self, kind: str, id: str) -> None:  # noqa: A002 - mirrors the record field
        super().__init__(f"{kind} {id!r} not found")
        self.kind = kind
        self.id = id


class AssemblyNotReplayableError(StoreError):
    """A stored assembly that cannot be recomputed from stored state, and why.

    Either it was stored before its replay inputs were (``store.records.ReplayInputs``),
    or something it was computed from is gone since (a user memory forgotten, its
    previous assembly deleted). Replay says so instead of recomputing something else.

    Attributes:
        assembly_id: the assembly.
        reason: why it cannot be recomputed.
    """

    def __init__(self, assembly_id: str, reason: str) -> None:
        super().__init__(f"assembly {assembly_id!r} is not replayable: {reason}")
        self.assembly_id = assembly_id
        self.reason = reason


class BranchCycleError(StoreError):
    """The parent chain of a branch revisits a branch.

    Attributes:
        branch_ids: the path walked, starting at the branch asked about and
            ending at the revisited branch.
    """

    def __init__(self, branch_ids: list[str] | tuple[str, ...], message: str | None = None) -> None:
        self.branch_ids = tuple(branch_ids)
        super().__init__(message or "branch cycle: " + " -> ".join(self.branch_ids))


class AccountDeletedError(StoreError):
    """A write to an account whose deletion has begun (``accounts.deleting_at`` is set).

    Permanent: the account is going away, and nothing may be written for it once its deletion started
    (:mod:`store.account_deletion`). An activity fails non-retryably with it.
    """


class IntegrityViolation(StoreError):
    """A write was refused because it would break a constraint of the graph."""


class InvalidForkPointError(IntegrityViolation):
    """The fork message is not part of the parent branch's lineage."""


class TaintError(IntegrityViolation):
    """A derived record names a source that is not in the account, so its privacy class cannot be computed.

    A derived record is never looser than its sources (:mod:`store.taint`); a source the
    store cannot find would make that unknowable, so the write is refused.
    """


class TransientStoreError(StoreError):
    """A failure that a retry may not meet again.

    Lost or refused connections, deadlocks and serialisation failures in
    Postgres; unreachable or failing S3 endpoints.
    """


class ArtifactStoreError(StoreError):
    """Base class of errors raised by the S3 artifact store."""


class ArtifactNotFoundError(ArtifactStoreError):
    """No object exists under the requested key.

    Attributes:
        key: the object key.
    """

    def __init__(self, key: str) -> None:
        super().__init__(f"artifact object {key!r} not found")
        self.key = key


class ArtifactRetainedError(ArtifactNotFoundError):
    """Retention archived or removed an artifact's raw bytes: the row stays, the bytes are not served.

    Attributes:
        key: ``retained:<artifact id>``.
        reason: why, as rehydration reports it (:data:`policy.retention.RAW_ARCHIVED_REASON`...).
    """

    def __init__(self, artifact_id: str, reason: str) -> None:
        super().__init__(f"retained:{artifact_id}")
        self.args = (f"artifact {artifact_id}: {reason}",)
        self.reason = reason


class ArtifactIntegrityError(ArtifactStoreError):
    """The stored bytes do not hash to the sha256 they were stored under.

    Attributes:
        key: the object key.
        expected: the sha256 the caller expected.
        actual: the sha256 of the bytes read.
    """

    def __init__(self, key: str, expected: str, actual: str) -> None:
        super().__init__(f"artifact {key!r}: expected sha256 {expected}, read {actual}")
        self.key = key
        self.expected = expected
        self.actual = actual


class PayloadTooLargeError(ArtifactStoreError):
    """A payload is larger than the store accepts."""


class ArtifactStoreUnavailableError(ArtifactStoreError, TransientStoreError):
    """The S3 endpoint could not be reached or answered with a server error; retryable."""


__all__ = [
    "AccountDeletedError",
    "ArtifactIntegrityError",
    "ArtifactNotFoundError",
    "ArtifactRetainedError",
    "ArtifactStoreError",
    "ArtifactStoreUnavailableError",
    "BranchCycleError",
    "IntegrityViolation",
    "InvalidForkPointError",
    "NotFoundError",
    "PayloadTooLargeError",
    "StoreError",
    "TaintError",
    "TransientStoreError",
]
