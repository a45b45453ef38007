"""Errors raised by the pure policy core.

::

    PolicyError
    ├── UnknownParticipantError   the boundary names a participant the candidates lack
    ├── BoundaryMismatchError     candidates were loaded for another branch
    ├── DerivationError           a tool payload cannot be read as its declared kind
    └── UnknownPolicyVersionError a policy version tag the registry does not hold (policy/versions.py)
"""

from __future__ import annotations


class PolicyError(Exception):
    """Base class of every policy-core error."""


class UnknownParticipantError(PolicyError):
    """The generation boundary names a participant that is not in the candidate set."""


class BoundaryMismatchError(PolicyError):
    """The candidate set was loaded for a different branch than the boundary's."""


class DerivationError(PolicyError):
    """A tool payload could not be parsed as the kind it claims to be."""


class UnknownPolicyVersionError(PolicyError):
    """A policy version tag (or name) that no registered policy carries: never replaced by a default."""

    def __init__(self, tag: str, detail: str) -> None:
        super().__init__(f"unknown policy version {tag!r}: {detail}")
        self.tag = tag
        """The tag or name asked for."""
